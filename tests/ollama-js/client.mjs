// Ollama's official JavaScript client (npm `ollama`, pinned in package.json) against
// `kvrun serve`: the checks of tests/sdk/ollama_python.py, written with this client.
// `node client.mjs first|second`; OLLAMA_HOST names the server, KVRUN_STATE a file the
// two runs share. A failed check exits non-zero with a `FAILED: ...` line.

import { readFileSync, writeFileSync } from 'node:fs'
import { Ollama } from 'ollama'

const host = process.env.OLLAMA_HOST
const state = process.env.KVRUN_STATE
const client = new Ollama({ host })
const MODEL = 'smollm2:latest'
const LISTED = 'smollm2-135m-instruct-q4_1:latest'
const GREEDY = { temperature: 0, num_predict: 8 }
const SYSTEM = 'You are a careful assistant who answers in few words. '.repeat(40)
const QUESTIONS = ['Name a colour.', 'Name another.', 'And a third?', 'One more?']

function check(condition, what) {
  if (!condition) {
    console.error(`FAILED: ${what}`)
    process.exit(1)
  }
}

function turns(replies) {
  const messages = [{ role: 'system', content: SYSTEM }]
  replies.forEach((reply, i) => {
    messages.push({ role: 'user', content: QUESTIONS[i] }, { role: 'assistant', content: reply })
  })
  messages.push({ role: 'user', content: QUESTIONS[replies.length] })
  return messages
}

function checkRestored(evaluated, whole, what) {
  check(evaluated > 0 && evaluated < whole / 2, `${what}: ${evaluated} prompt tokens evaluated of ${whole}+`)
}

async function expectStatus(status, call, needle) {
  try {
    await call()
  } catch (e) {
    check(e.status_code === status, `status ${e.status_code}, not ${status}: ${e.error ?? e}`)
    check(String(e.error).includes(needle), `${e.error} lacks ${needle}`)
    return
  }
  check(false, `expected a ${status} ResponseError`)
}

const user = (content) => [{ role: 'user', content }]

if (process.argv[2] === 'first') {
  const listed = (await client.list()).models.map((m) => m.model)
  check(listed.includes(LISTED), `list() gave ${listed}`)
  const shown = await client.show({ model: MODEL })
  check(shown.details.format === 'gguf', `show details ${JSON.stringify(shown.details)}`)
  check(shown.capabilities.includes('completion'), `capabilities ${shown.capabilities}`)

  const chat = await client.chat({ model: MODEL, messages: user('Say hello.'), options: GREEDY })
  check(chat.done && chat.eval_count === 8 && chat.total_duration > 0, `chat ${JSON.stringify(chat)}`)
  let streamed = ''
  let last
  for await (const part of await client.chat({
    model: MODEL, messages: user('Say hello.'), options: GREEDY, stream: true,
  })) {
    streamed += part.message.content
    last = part
  }
  check(last.done && last.done_reason === 'length', `last part ${JSON.stringify(last)}`)
  check(streamed === chat.message.content, `streamed ${streamed} != ${chat.message.content}`)
  const running = (await client.ps()).models.map((m) => m.model)
  check(running.includes(LISTED), `ps() gave ${running}`)

  const tool = {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the current weather for a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', description: 'The city' } },
        required: ['city'],
      },
    },
  }
  // A tool round trip as this client writes it: the model's earlier call (arguments as an
  // object) and its result (`tool_name`) in the history.
  const answered = await client.chat({
    model: MODEL,
    messages: [
      ...user('What is the weather in Paris? Use the get_weather tool.'),
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
      { role: 'tool', content: 'sunny', tool_name: 'get_weather' },
    ],
    tools: [tool], options: GREEDY,
  })
  check(answered.done && answered.eval_count > 0, `tool round trip ${JSON.stringify(answered)}`)

  const schema = {
    type: 'object',
    properties: {
      colour: { type: 'string', enum: ['red', 'green', 'blue'] },
      count: { type: 'integer', enum: [1, 2, 3] },
    },
    required: ['colour', 'count'],
  }
  const shaped = await client.chat({
    model: MODEL, messages: user('A colour as JSON.'), format: schema,
    options: { temperature: 0, num_predict: 24 },
  })
  const value = JSON.parse(shaped.message.content)
  check(['red', 'green', 'blue'].includes(value.colour), `colour in ${shaped.message.content}`)
  check([1, 2, 3].includes(value.count), `count in ${shaped.message.content}`)

  const raw = await client.generate({
    model: MODEL, prompt: 'The capital of France is', raw: true, options: GREEDY,
  })
  check(raw.done && raw.eval_count === 8, `raw ${JSON.stringify(raw)}`)
  console.log('GREEDY ' + JSON.stringify({ chat: chat.message.content, raw: raw.response }))

  const first = await client.chat({ model: MODEL, messages: turns([]), options: GREEDY })
  const whole = first.prompt_eval_count
  check(whole > 256, `first turn evaluated ${whole} prompt tokens`)
  const second = await client.chat({
    model: MODEL, messages: turns([first.message.content]), options: GREEDY,
  })
  checkRestored(second.prompt_eval_count, whole, 'second turn')
  writeFileSync(state, JSON.stringify({ replies: [first.message.content, second.message.content], whole }))

  const unloaded = await client.generate({ model: MODEL, prompt: '', keep_alive: 0 })
  check(unloaded.done_reason === 'unload', `unload ${JSON.stringify(unloaded)}`)
  check((await client.ps()).models.length === 0, 'ps after unload')

  await expectStatus(404, () => client.chat({ model: 'no-such-model', messages: [] }), 'no-such-model')
  await expectStatus(400, () => client.chat({
    model: MODEL, messages: [{ role: 'user', content: 'what is this', images: ['aGk='] }],
  }), 'text only')
  await expectStatus(501, () => client.embed({ model: MODEL, input: 'x' }), 'embeddings')
  console.log('ollama js: first ok')
} else {
  const saved = JSON.parse(readFileSync(state, 'utf8'))
  const third = await client.chat({ model: MODEL, messages: turns(saved.replies), options: GREEDY })
  checkRestored(third.prompt_eval_count, saved.whole, 'after a restart')
  console.log('ollama js: second ok')
}
