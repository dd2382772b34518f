
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'kvrun' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'kvrun'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'kvrun' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('chat', 'chat', [CompletionResultType]::ParameterValue, 'Chat interactively with a model (line mode; streams tokens as they come)')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run one prompt and print only the generated text (for scripts and agents)')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve OpenAI- and Anthropic-compatible HTTP; every conversation is a persistent session')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'Watch a running `kvrun serve`: the TUI''s memory panel and sessions list, live')
            [CompletionResult]::new('pull', 'pull', [CompletionResultType]::ParameterValue, 'Download a model: the default models, one by name, a URL, or hf:OWNER/REPO/FILE.gguf')
            [CompletionResult]::new('models', 'models', [CompletionResultType]::ParameterValue, 'List the models in kvrun''s models folder')
            [CompletionResult]::new('session', 'session', [CompletionResultType]::ParameterValue, 'Save, restore, list, fork, export and import persistent sessions')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Delete KV pages that no session references any more')
            [CompletionResult]::new('stats', 'stats', [CompletionResultType]::ParameterValue, 'Memory tiers and devices: the page store, RAM, disk and GPU figures')
            [CompletionResult]::new('bench', 'bench', [CompletionResultType]::ParameterValue, 'Benchmarks that print tables: prefill/decode speed, session restore')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the man page (or write one page per subcommand with --dir)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kvrun;chat' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Resume or create a named session; its KV cache is saved after every turn (without it, the chat is an unnamed session, kept too and collected first under the cold budget). A server''s client key names a family of conversations: NAME is its latest, NAME/N its Nth')
            [CompletionResult]::new('--system', '--system', [CompletionResultType]::ParameterName, 'A system prompt for the conversation')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Largest reply in tokens, so a model that never stops cannot run on [default: 1024]')
            [CompletionResult]::new('--max-tokens', '--max-tokens', [CompletionResultType]::ParameterName, 'Largest reply in tokens, so a model that never stops cannot run on [default: 1024]')
            [CompletionResult]::new('--context-overflow', '--context-overflow', [CompletionResultType]::ParameterName, 'What to do when the conversation outgrows the context: drop the oldest turns, or stop with an error [default: truncate]')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('--temp', '--temp', [CompletionResultType]::ParameterName, 'Temperature; 0 is greedy [default: 0.8]')
            [CompletionResult]::new('--top-k', '--top-k', [CompletionResultType]::ParameterName, 'Keep only the K most likely tokens; 0 disables [default: 40]')
            [CompletionResult]::new('--top-p', '--top-p', [CompletionResultType]::ParameterName, 'Nucleus sampling threshold; 1.0 disables [default: 0.95]')
            [CompletionResult]::new('--min-p', '--min-p', [CompletionResultType]::ParameterName, 'Minimum probability relative to the top token; 0 disables [default: 0.05]')
            [CompletionResult]::new('--repeat-penalty', '--repeat-penalty', [CompletionResultType]::ParameterName, 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Random seed [default: a fresh one per run]')
            [CompletionResult]::new('--hot-sessions', '--hot-sessions', [CompletionResultType]::ParameterName, 'Sessions kept resident in the context at once (switching to one is instant) [default: 4]')
            [CompletionResult]::new('--warm-budget', '--warm-budget', [CompletionResultType]::ParameterName, 'RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]')
            [CompletionResult]::new('--cold-budget', '--cold-budget', [CompletionResultType]::ParameterName, 'Disk for the page store; past it, pages no session uses go first [default: none]')
            [CompletionResult]::new('--hot-idle', '--hot-idle', [CompletionResultType]::ParameterName, 'A session idle this long leaves the context, e.g. 10m; then an elastic context (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto, else never]')
            [CompletionResult]::new('--warm-idle', '--warm-idle', [CompletionResultType]::ParameterName, 'Pages unused this long leave RAM, e.g. 1h [default: never]')
            [CompletionResult]::new('--plain', '--plain', [CompletionResultType]::ParameterName, 'Line mode even on a terminal')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;run' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'The prompt text (otherwise --prompt-file, otherwise stdin)')
            [CompletionResult]::new('--prompt', '--prompt', [CompletionResultType]::ParameterName, 'The prompt text (otherwise --prompt-file, otherwise stdin)')
            [CompletionResult]::new('--prompt-file', '--prompt-file', [CompletionResultType]::ParameterName, 'Read the prompt from a file')
            [CompletionResult]::new('--system', '--system', [CompletionResultType]::ParameterName, 'A system prompt (chat mode only)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Largest number of tokens to generate; 0 only prefills [default: 256]')
            [CompletionResult]::new('--max-tokens', '--max-tokens', [CompletionResultType]::ParameterName, 'Largest number of tokens to generate; 0 only prefills [default: 256]')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Resume or create a named session: restore its KV, append this turn, generate, save. A server''s client key names a family of conversations: NAME is its latest, NAME/N its Nth')
            [CompletionResult]::new('--logprobs', '--logprobs', [CompletionResultType]::ParameterName, 'Add each generated token''s log-probability (with --json), and the N most likely alternatives')
            [CompletionResult]::new('--tools', '--tools', [CompletionResultType]::ParameterName, 'Tools the model may call: a JSON list of OpenAI tool definitions. Calls are parsed from the reply (`tool_calls` in --json)')
            [CompletionResult]::new('--tool-choice', '--tool-choice', [CompletionResultType]::ParameterName, 'auto (the model decides), none, required (a call is forced), or a tool''s name (that call is forced) [default: auto]')
            [CompletionResult]::new('--json-schema', '--json-schema', [CompletionResultType]::ParameterName, 'Force the reply to be JSON valid under this JSON schema (a file)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('--temp', '--temp', [CompletionResultType]::ParameterName, 'Temperature; 0 is greedy [default: 0.8]')
            [CompletionResult]::new('--top-k', '--top-k', [CompletionResultType]::ParameterName, 'Keep only the K most likely tokens; 0 disables [default: 40]')
            [CompletionResult]::new('--top-p', '--top-p', [CompletionResultType]::ParameterName, 'Nucleus sampling threshold; 1.0 disables [default: 0.95]')
            [CompletionResult]::new('--min-p', '--min-p', [CompletionResultType]::ParameterName, 'Minimum probability relative to the top token; 0 disables [default: 0.05]')
            [CompletionResult]::new('--repeat-penalty', '--repeat-penalty', [CompletionResultType]::ParameterName, 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Random seed [default: a fresh one per run]')
            [CompletionResult]::new('--raw', '--raw', [CompletionResultType]::ParameterName, 'Feed the text as-is (plain completion, no chat template)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON object (text, tokens and timings) instead of the text')
            [CompletionResult]::new('--continue', '--continue', [CompletionResultType]::ParameterName, 'Add no input: generate on from where the session stands')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;serve' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'Address to listen on; anything but a loopback address needs --api-key [default: 127.0.0.1]')
            [CompletionResult]::new('--port', '--port', [CompletionResultType]::ParameterName, 'Port to listen on; 0 picks a free one (the real one is printed) [default: 8080]')
            [CompletionResult]::new('--api-key', '--api-key', [CompletionResultType]::ParameterName, 'Require this key on every endpoint but /health (`Authorization: Bearer KEY` or `x-api-key: KEY`)')
            [CompletionResult]::new('--parallel', '--parallel', [CompletionResultType]::ParameterName, 'Sequences decoded together in one batch [default: 4]')
            [CompletionResult]::new('--alias', '--alias', [CompletionResultType]::ParameterName, 'The model name responses carry [default: the model''s own name]')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Largest reply in tokens: a request that asks for more, or sets no limit, gets N, so a model that never stops cannot hold a sequence until the context fills [default: the room the context leaves]')
            [CompletionResult]::new('--max-tokens', '--max-tokens', [CompletionResultType]::ParameterName, 'Largest reply in tokens: a request that asks for more, or sets no limit, gets N, so a model that never stops cannot hold a sequence until the context fills [default: the room the context leaves]')
            [CompletionResult]::new('--max-ctx-size', '--max-ctx-size', [CompletionResultType]::ParameterName, 'Largest context --ctx-size auto grows to, in tokens [default: the model''s training context]')
            [CompletionResult]::new('--max-queue', '--max-queue', [CompletionResultType]::ParameterName, 'Requests that may wait for a free sequence; past it, 503 with Retry-After [default: 64]')
            [CompletionResult]::new('--max-body-bytes', '--max-body-bytes', [CompletionResultType]::ParameterName, 'Largest request body, e.g. 32MiB; past it, 413 [default: 32MiB]')
            [CompletionResult]::new('--request-timeout', '--request-timeout', [CompletionResultType]::ParameterName, 'Longest time to the start of a response (a stream, once started, runs on), e.g. 10m; 0 turns it off [default: 10m]')
            [CompletionResult]::new('--header-timeout', '--header-timeout', [CompletionResultType]::ParameterName, 'Longest time a client may take to send a request''s headers, and the longest a keep-alive connection may idle, e.g. 30s [default: 30s]')
            [CompletionResult]::new('--body-timeout', '--body-timeout', [CompletionResultType]::ParameterName, 'Longest time a client may take to send a request''s whole body once its headers are in; past it, 408, e.g. 60s [default: 60s]')
            [CompletionResult]::new('--cors-origin', '--cors-origin', [CompletionResultType]::ParameterName, 'Allow browser requests from this origin (repeatable; `*` for any) [default: none, CORS off]')
            [CompletionResult]::new('--durability', '--durability', [CompletionResultType]::ParameterName, 'When a finished reply''s save is on disk: `before` its final event (`[DONE]`, `message_stop`, `response.completed`) or body is sent, so a reply the client has read survives a crash (no exit path loses a turn); or `after`, tens of ms sooner and lost to a crash in between. Tokens stream as they come either way [default: before]')
            [CompletionResult]::new('--default-model', '--default-model', [CompletionResultType]::ParameterName, 'The model a request gets when its `model` names none of the server''s models or aliases; `none` answers those with 404 [default: the config file''s `default-model`, then KVRUN_MODEL, the config file''s `model`, then gemma3 when it is pulled]')
            [CompletionResult]::new('--model-alias', '--model-alias', [CompletionResultType]::ParameterName, 'Another name for a model, or a pattern of names (`claude-haiku-*=smollm2`); repeatable [default: the config file''s `[model-aliases]` table]')
            [CompletionResult]::new('--memory-budget', '--memory-budget', [CompletionResultType]::ParameterName, 'Memory every loaded model''s weights, context and compute buffers share, e.g. 8GiB; past it, idle models are unloaded [default: 90% of the RAM available at start, less the warm tier''s budget and 256 MiB of restore buffers]')
            [CompletionResult]::new('--keep-alive', '--keep-alive', [CompletionResultType]::ParameterName, 'How long a model stays loaded after its last request, e.g. 5m; 0 unloads at once, -1 never; a request''s `keep_alive` overrides it [default: 5m; -1 with MODEL]')
            [CompletionResult]::new('--swap-wait', '--swap-wait', [CompletionResultType]::ParameterName, 'How long a request waits for busy models that hold the memory its model needs; then they stop admitting requests, finish their replies, save and unload, and the models take turns [default: 3s]')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('--temp', '--temp', [CompletionResultType]::ParameterName, 'Temperature; 0 is greedy [default: 0.8]')
            [CompletionResult]::new('--top-k', '--top-k', [CompletionResultType]::ParameterName, 'Keep only the K most likely tokens; 0 disables [default: 40]')
            [CompletionResult]::new('--top-p', '--top-p', [CompletionResultType]::ParameterName, 'Nucleus sampling threshold; 1.0 disables [default: 0.95]')
            [CompletionResult]::new('--min-p', '--min-p', [CompletionResultType]::ParameterName, 'Minimum probability relative to the top token; 0 disables [default: 0.05]')
            [CompletionResult]::new('--repeat-penalty', '--repeat-penalty', [CompletionResultType]::ParameterName, 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Random seed [default: a fresh one per run]')
            [CompletionResult]::new('--hot-sessions', '--hot-sessions', [CompletionResultType]::ParameterName, 'Sessions kept resident in the context at once (switching to one is instant) [default: 4]')
            [CompletionResult]::new('--warm-budget', '--warm-budget', [CompletionResultType]::ParameterName, 'RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]')
            [CompletionResult]::new('--cold-budget', '--cold-budget', [CompletionResultType]::ParameterName, 'Disk for the page store; past it, pages no session uses go first [default: none]')
            [CompletionResult]::new('--hot-idle', '--hot-idle', [CompletionResultType]::ParameterName, 'A session idle this long leaves the context, e.g. 10m; then an elastic context (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto, else never]')
            [CompletionResult]::new('--warm-idle', '--warm-idle', [CompletionResultType]::ParameterName, 'Pages unused this long leave RAM, e.g. 1h [default: never]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;top' {
            [CompletionResult]::new('--api-key', '--api-key', [CompletionResultType]::ParameterName, 'The server''s API key (sent as a bearer token)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;pull' {
            [CompletionResult]::new('--sha256', '--sha256', [CompletionResultType]::ParameterName, 'Expected SHA-256 of the file (hex); a mismatch fails the pull and installs nothing')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'File name to save as in the models folder [default: the URL''s last path segment]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;models' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON instead of a table')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;session' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('save', 'save', [CompletionResultType]::ParameterValue, 'Prefill a document or transcript into a new or existing session and persist it')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Load a session into a context and check it (with --check), printing the timing')
            [CompletionResult]::new('ls', 'ls', [CompletionResultType]::ParameterValue, 'List sessions (with --connect, those of a running `kvrun serve` and their tiers)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one session: model, settings, tokens, pages and what they share')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Delete a session (pages shared with other sessions stay)')
            [CompletionResult]::new('fork', 'fork', [CompletionResultType]::ParameterValue, 'Copy a session under a new name; instant, copies no page')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Write a session and its pages to one self-contained file')
            [CompletionResult]::new('import', 'import', [CompletionResultType]::ParameterValue, 'Read a session from an exported file, validating everything first')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kvrun;session;save' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'The document to prefill; `-` reads stdin')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'The document to prefill; `-` reads stdin')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('--raw', '--raw', [CompletionResultType]::ParameterName, 'Feed the text as-is instead of as a user message in the chat template')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON object with the counts and timings')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;session;restore' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('--temp', '--temp', [CompletionResultType]::ParameterName, 'Temperature; 0 is greedy [default: 0.8]')
            [CompletionResult]::new('--top-k', '--top-k', [CompletionResultType]::ParameterName, 'Keep only the K most likely tokens; 0 disables [default: 40]')
            [CompletionResult]::new('--top-p', '--top-p', [CompletionResultType]::ParameterName, 'Nucleus sampling threshold; 1.0 disables [default: 0.95]')
            [CompletionResult]::new('--min-p', '--min-p', [CompletionResultType]::ParameterName, 'Minimum probability relative to the top token; 0 disables [default: 0.05]')
            [CompletionResult]::new('--repeat-penalty', '--repeat-penalty', [CompletionResultType]::ParameterName, 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Random seed [default: a fresh one per run]')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'Load the session, verify it, print the timing and exit')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'json')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;session;ls' {
            [CompletionResult]::new('--connect', '--connect', [CompletionResultType]::ParameterName, 'The server''s URL, e.g. http://127.0.0.1:8080')
            [CompletionResult]::new('--api-key', '--api-key', [CompletionResultType]::ParameterName, 'The server''s API key (sent as a bearer token)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;session;show' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;session;rm' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;session;fork' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;session;export' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;session;import' {
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Import under this name instead of the exported one')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The session''s model (a path, or a name in the models folder), checked against the session''s fingerprint [default: the model of that fingerprint in the models folder]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;session;help' {
            [CompletionResult]::new('save', 'save', [CompletionResultType]::ParameterValue, 'Prefill a document or transcript into a new or existing session and persist it')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Load a session into a context and check it (with --check), printing the timing')
            [CompletionResult]::new('ls', 'ls', [CompletionResultType]::ParameterValue, 'List sessions (with --connect, those of a running `kvrun serve` and their tiers)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one session: model, settings, tokens, pages and what they share')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Delete a session (pages shared with other sessions stay)')
            [CompletionResult]::new('fork', 'fork', [CompletionResultType]::ParameterValue, 'Copy a session under a new name; instant, copies no page')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Write a session and its pages to one self-contained file')
            [CompletionResult]::new('import', 'import', [CompletionResultType]::ParameterValue, 'Read a session from an exported file, validating everything first')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kvrun;session;help;save' {
            break
        }
        'kvrun;session;help;restore' {
            break
        }
        'kvrun;session;help;ls' {
            break
        }
        'kvrun;session;help;show' {
            break
        }
        'kvrun;session;help;rm' {
            break
        }
        'kvrun;session;help;fork' {
            break
        }
        'kvrun;session;help;export' {
            break
        }
        'kvrun;session;help;import' {
            break
        }
        'kvrun;session;help;help' {
            break
        }
        'kvrun;gc' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;stats' {
            [CompletionResult]::new('--connect', '--connect', [CompletionResultType]::ParameterName, 'The server''s URL, e.g. http://127.0.0.1:8080')
            [CompletionResult]::new('--api-key', '--api-key', [CompletionResultType]::ParameterName, 'The server''s API key (sent as a bearer token)')
            [CompletionResult]::new('--hot-sessions', '--hot-sessions', [CompletionResultType]::ParameterName, 'Sessions kept resident in the context at once (switching to one is instant) [default: 4]')
            [CompletionResult]::new('--warm-budget', '--warm-budget', [CompletionResultType]::ParameterName, 'RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]')
            [CompletionResult]::new('--cold-budget', '--cold-budget', [CompletionResultType]::ParameterName, 'Disk for the page store; past it, pages no session uses go first [default: none]')
            [CompletionResult]::new('--hot-idle', '--hot-idle', [CompletionResultType]::ParameterName, 'A session idle this long leaves the context, e.g. 10m; then an elastic context (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto, else never]')
            [CompletionResult]::new('--warm-idle', '--warm-idle', [CompletionResultType]::ParameterName, 'Pages unused this long leave RAM, e.g. 1h [default: never]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('speed', 'speed', [CompletionResultType]::ParameterValue, 'Prefill and decode tokens per second, kvrun''s schedule next to llama.cpp''s')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Session restore against cold prefill and llama.cpp''s own state files')
            [CompletionResult]::new('switch', 'switch', [CompletionResultType]::ParameterValue, 'Switching between many sessions through the hot, warm and cold tiers')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, '`kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call, next turn, after a restart), the server''s overhead, concurrent decode')
            [CompletionResult]::new('batch', 'batch', [CompletionResultType]::ParameterValue, 'Concurrent streams through the service engine against llama.cpp''s batched decode')
            [CompletionResult]::new('kv-types', 'kv-types', [CompletionResultType]::ParameterValue, 'KV element types against f16: bytes per token, restore time, greedy agreement and log-probability drift')
            [CompletionResult]::new('ctx', 'ctx', [CompletionResultType]::ParameterValue, 'The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same ceiling: the server''s resident memory idle and holding each length, and what a growth step paused')
            [CompletionResult]::new('swap', 'swap', [CompletionResultType]::ParameterValue, '`kvrun serve` of two models under a budget that holds one: what a swap costs (unload with its saves, then load; from the page cache and cold) against a fresh process, a returning conversation''s time to first token against a cold prefill, and the peak resident memory against the budget')
            [CompletionResult]::new('checkpoints', 'checkpoints', [CompletionResultType]::ParameterValue, 'Checkpoints of recurrent and hybrid models: bytes and capture time of each against the prefill that made them, and the time to first token of a prompt that parts from a held conversation, from the last checkpoint before the parting point')
            [CompletionResult]::new('grammar', 'grammar', [CompletionResultType]::ParameterValue, 'Tool-call constraints on the recorded agents'' tool schemas (tests/agents): the time to build each (llama.cpp''s GBNF, forced and lazy, and llguidance) and its cost per sampled token against unconstrained sampling')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kvrun;bench;speed' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('--prompt-tokens', '--prompt-tokens', [CompletionResultType]::ParameterName, 'Prompt lengths to measure, in tokens')
            [CompletionResult]::new('--decode-tokens', '--decode-tokens', [CompletionResultType]::ParameterName, 'Tokens to generate for the decode figure')
            [CompletionResult]::new('--repeat', '--repeat', [CompletionResultType]::ParameterName, 'Repetitions per row; the table shows the median')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;restore' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('--tokens', '--tokens', [CompletionResultType]::ParameterName, 'Session lengths to measure, in tokens')
            [CompletionResult]::new('--share-sessions', '--share-sessions', [CompletionResultType]::ParameterName, 'Sessions in the prefix-sharing row (they share a --share-prefix-token prefix)')
            [CompletionResult]::new('--share-prefix', '--share-prefix', [CompletionResultType]::ParameterName, 'share-prefix')
            [CompletionResult]::new('--shape', '--shape', [CompletionResultType]::ParameterName, 'Instead of MODEL, benchmark a generated random-weight model of this shape (no download; written into the benchmark''s temp folder unless --shape-dir is given)')
            [CompletionResult]::new('--shape-dir', '--shape-dir', [CompletionResultType]::ParameterName, 'Keep the generated --shape model in this folder, and reuse it when already there')
            [CompletionResult]::new('--repeat', '--repeat', [CompletionResultType]::ParameterName, 'Times each restore is measured (llama.cpp''s load, kvrun''s in process and in a fresh process, the cold read), alternating, each from a cold page cache, then llama.cpp''s load and kvrun''s restore again from a warm one; medians are shown')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('--synthetic', '--synthetic', [CompletionResultType]::ParameterName, 'Build each session from deterministic noise KV (no prefill) and time restore only: for lengths whose prefill would take hours; the rows'' values are not the model''s')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;switch' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('--sessions', '--sessions', [CompletionResultType]::ParameterName, 'Sessions to switch between')
            [CompletionResult]::new('--tokens', '--tokens', [CompletionResultType]::ParameterName, 'Tokens in each session')
            [CompletionResult]::new('--rounds', '--rounds', [CompletionResultType]::ParameterName, 'Rounds of switching through all sessions')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;serve' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('--prompt-tokens', '--prompt-tokens', [CompletionResultType]::ParameterName, 'Tokens in the agent-shaped prompt (system blocks and tool schemas)')
            [CompletionResult]::new('--decode-tokens', '--decode-tokens', [CompletionResultType]::ParameterName, 'Tokens generated per call')
            [CompletionResult]::new('--streams', '--streams', [CompletionResultType]::ParameterName, 'Concurrent streams for the aggregate decode rows')
            [CompletionResult]::new('--llama-server', '--llama-server', [CompletionResultType]::ParameterName, 'A llama-server binary to run the same conversation against, side by side (same model, threads, context, one slot, greedy); prints that table instead of the others. Build it from the pinned llama.cpp as the README''s "Serving over HTTP" benchmark says')
            [CompletionResult]::new('--repeat', '--repeat', [CompletionResultType]::ParameterName, 'Times each side-by-side row is measured, each from a fresh home; medians are shown')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;batch' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('--streams', '--streams', [CompletionResultType]::ParameterName, 'Concurrent streams to measure')
            [CompletionResult]::new('--prompt-tokens', '--prompt-tokens', [CompletionResultType]::ParameterName, 'Prompt tokens of each stream')
            [CompletionResult]::new('--decode-tokens', '--decode-tokens', [CompletionResultType]::ParameterName, 'Tokens each stream generates')
            [CompletionResult]::new('--rounds', '--rounds', [CompletionResultType]::ParameterName, 'Measurements of each stream count, the service''s and llama.cpp''s alternating; the table shows the best throughput (the least disturbed on a shared machine) and the slowest time to first token')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;kv-types' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('--types', '--types', [CompletionResultType]::ParameterName, 'KV types to compare; f16, the reference, is always measured')
            [CompletionResult]::new('--tokens', '--tokens', [CompletionResultType]::ParameterName, 'Session lengths to measure, in tokens')
            [CompletionResult]::new('--decode-tokens', '--decode-tokens', [CompletionResultType]::ParameterName, 'Greedy tokens generated after each session (and scored under teacher forcing)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('--tiny', '--tiny', [CompletionResultType]::ParameterName, 'Measure kvrun''s tiny random-weight llama test model (written into the benchmark''s folder) instead of --model')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;ctx' {
            [CompletionResult]::new('--chat-template', '--chat-template', [CompletionResultType]::ParameterName, 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]')
            [CompletionResult]::new('--tokens', '--tokens', [CompletionResultType]::ParameterName, 'Tokens one conversation holds at each measurement (it grows from one to the next)')
            [CompletionResult]::new('--max-ctx-size', '--max-ctx-size', [CompletionResultType]::ParameterName, 'The ceiling of the elastic context and the size of the fixed one [default: the model''s training context]')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('--tiny', '--tiny', [CompletionResultType]::ParameterName, 'Measure kvrun''s tiny random-weight llama test model (written into the benchmark''s folder, with a training context of the ceiling or 32768) instead of --model')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;swap' {
            [CompletionResult]::new('--models', '--models', [CompletionResultType]::ParameterName, 'The two models, each a .gguf path, a name in the models folder, or smollm2/gemma3')
            [CompletionResult]::new('--prompt-tokens', '--prompt-tokens', [CompletionResultType]::ParameterName, 'Prompt tokens of each conversation (about: the text is tokenized by each model)')
            [CompletionResult]::new('--rounds', '--rounds', [CompletionResultType]::ParameterName, 'Times each model is swapped back in')
            [CompletionResult]::new('--budget', '--budget', [CompletionResultType]::ParameterName, 'The memory budget [default: the larger model''s measured charge, plus 5%]')
            [CompletionResult]::new('--clients', '--clients', [CompletionResultType]::ParameterName, 'Mixed load: clients per model looping on both models at once')
            [CompletionResult]::new('--mixed-secs', '--mixed-secs', [CompletionResultType]::ParameterName, 'Mixed load: seconds the clients loop')
            [CompletionResult]::new('--swap-wait', '--swap-wait', [CompletionResultType]::ParameterName, 'Mixed load: the server''s `--swap-wait` [default: serve''s]')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;checkpoints' {
            [CompletionResult]::new('--tokens', '--tokens', [CompletionResultType]::ParameterName, 'Prompt tokens of each measurement')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;grammar' {
            [CompletionResult]::new('--models', '--models', [CompletionResultType]::ParameterName, 'Models, each a .gguf path, a name in the models folder, or smollm2/gemma3')
            [CompletionResult]::new('--agents', '--agents', [CompletionResultType]::ParameterName, 'The folder of recorded agent requests (claude-code-messages.json, codex-responses.json, opencode-main.json)')
            [CompletionResult]::new('--tokens', '--tokens', [CompletionResultType]::ParameterName, 'Tokens generated under each constraint, at most (a call may end sooner)')
            [CompletionResult]::new('--repeat', '--repeat', [CompletionResultType]::ParameterName, 'Builds of each constraint; the table shows the median')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;bench;help' {
            [CompletionResult]::new('speed', 'speed', [CompletionResultType]::ParameterValue, 'Prefill and decode tokens per second, kvrun''s schedule next to llama.cpp''s')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Session restore against cold prefill and llama.cpp''s own state files')
            [CompletionResult]::new('switch', 'switch', [CompletionResultType]::ParameterValue, 'Switching between many sessions through the hot, warm and cold tiers')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, '`kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call, next turn, after a restart), the server''s overhead, concurrent decode')
            [CompletionResult]::new('batch', 'batch', [CompletionResultType]::ParameterValue, 'Concurrent streams through the service engine against llama.cpp''s batched decode')
            [CompletionResult]::new('kv-types', 'kv-types', [CompletionResultType]::ParameterValue, 'KV element types against f16: bytes per token, restore time, greedy agreement and log-probability drift')
            [CompletionResult]::new('ctx', 'ctx', [CompletionResultType]::ParameterValue, 'The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same ceiling: the server''s resident memory idle and holding each length, and what a growth step paused')
            [CompletionResult]::new('swap', 'swap', [CompletionResultType]::ParameterValue, '`kvrun serve` of two models under a budget that holds one: what a swap costs (unload with its saves, then load; from the page cache and cold) against a fresh process, a returning conversation''s time to first token against a cold prefill, and the peak resident memory against the budget')
            [CompletionResult]::new('checkpoints', 'checkpoints', [CompletionResultType]::ParameterValue, 'Checkpoints of recurrent and hybrid models: bytes and capture time of each against the prefill that made them, and the time to first token of a prompt that parts from a held conversation, from the last checkpoint before the parting point')
            [CompletionResult]::new('grammar', 'grammar', [CompletionResultType]::ParameterValue, 'Tool-call constraints on the recorded agents'' tool schemas (tests/agents): the time to build each (llama.cpp''s GBNF, forced and lazy, and llguidance) and its cost per sampled token against unconstrained sampling')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kvrun;bench;help;speed' {
            break
        }
        'kvrun;bench;help;restore' {
            break
        }
        'kvrun;bench;help;switch' {
            break
        }
        'kvrun;bench;help;serve' {
            break
        }
        'kvrun;bench;help;batch' {
            break
        }
        'kvrun;bench;help;kv-types' {
            break
        }
        'kvrun;bench;help;ctx' {
            break
        }
        'kvrun;bench;help;swap' {
            break
        }
        'kvrun;bench;help;checkpoints' {
            break
        }
        'kvrun;bench;help;grammar' {
            break
        }
        'kvrun;bench;help;help' {
            break
        }
        'kvrun;completions' {
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;man' {
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'Write kvrun.1 and one page per subcommand into this folder instead of printing')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Hide progress bars and notes; errors still print')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kvrun;help' {
            [CompletionResult]::new('chat', 'chat', [CompletionResultType]::ParameterValue, 'Chat interactively with a model (line mode; streams tokens as they come)')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run one prompt and print only the generated text (for scripts and agents)')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve OpenAI- and Anthropic-compatible HTTP; every conversation is a persistent session')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'Watch a running `kvrun serve`: the TUI''s memory panel and sessions list, live')
            [CompletionResult]::new('pull', 'pull', [CompletionResultType]::ParameterValue, 'Download a model: the default models, one by name, a URL, or hf:OWNER/REPO/FILE.gguf')
            [CompletionResult]::new('models', 'models', [CompletionResultType]::ParameterValue, 'List the models in kvrun''s models folder')
            [CompletionResult]::new('session', 'session', [CompletionResultType]::ParameterValue, 'Save, restore, list, fork, export and import persistent sessions')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Delete KV pages that no session references any more')
            [CompletionResult]::new('stats', 'stats', [CompletionResultType]::ParameterValue, 'Memory tiers and devices: the page store, RAM, disk and GPU figures')
            [CompletionResult]::new('bench', 'bench', [CompletionResultType]::ParameterValue, 'Benchmarks that print tables: prefill/decode speed, session restore')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the man page (or write one page per subcommand with --dir)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kvrun;help;chat' {
            break
        }
        'kvrun;help;run' {
            break
        }
        'kvrun;help;serve' {
            break
        }
        'kvrun;help;top' {
            break
        }
        'kvrun;help;pull' {
            break
        }
        'kvrun;help;models' {
            break
        }
        'kvrun;help;session' {
            [CompletionResult]::new('save', 'save', [CompletionResultType]::ParameterValue, 'Prefill a document or transcript into a new or existing session and persist it')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Load a session into a context and check it (with --check), printing the timing')
            [CompletionResult]::new('ls', 'ls', [CompletionResultType]::ParameterValue, 'List sessions (with --connect, those of a running `kvrun serve` and their tiers)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one session: model, settings, tokens, pages and what they share')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Delete a session (pages shared with other sessions stay)')
            [CompletionResult]::new('fork', 'fork', [CompletionResultType]::ParameterValue, 'Copy a session under a new name; instant, copies no page')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Write a session and its pages to one self-contained file')
            [CompletionResult]::new('import', 'import', [CompletionResultType]::ParameterValue, 'Read a session from an exported file, validating everything first')
            break
        }
        'kvrun;help;session;save' {
            break
        }
        'kvrun;help;session;restore' {
            break
        }
        'kvrun;help;session;ls' {
            break
        }
        'kvrun;help;session;show' {
            break
        }
        'kvrun;help;session;rm' {
            break
        }
        'kvrun;help;session;fork' {
            break
        }
        'kvrun;help;session;export' {
            break
        }
        'kvrun;help;session;import' {
            break
        }
        'kvrun;help;gc' {
            break
        }
        'kvrun;help;stats' {
            break
        }
        'kvrun;help;bench' {
            [CompletionResult]::new('speed', 'speed', [CompletionResultType]::ParameterValue, 'Prefill and decode tokens per second, kvrun''s schedule next to llama.cpp''s')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Session restore against cold prefill and llama.cpp''s own state files')
            [CompletionResult]::new('switch', 'switch', [CompletionResultType]::ParameterValue, 'Switching between many sessions through the hot, warm and cold tiers')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, '`kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call, next turn, after a restart), the server''s overhead, concurrent decode')
            [CompletionResult]::new('batch', 'batch', [CompletionResultType]::ParameterValue, 'Concurrent streams through the service engine against llama.cpp''s batched decode')
            [CompletionResult]::new('kv-types', 'kv-types', [CompletionResultType]::ParameterValue, 'KV element types against f16: bytes per token, restore time, greedy agreement and log-probability drift')
            [CompletionResult]::new('ctx', 'ctx', [CompletionResultType]::ParameterValue, 'The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same ceiling: the server''s resident memory idle and holding each length, and what a growth step paused')
            [CompletionResult]::new('swap', 'swap', [CompletionResultType]::ParameterValue, '`kvrun serve` of two models under a budget that holds one: what a swap costs (unload with its saves, then load; from the page cache and cold) against a fresh process, a returning conversation''s time to first token against a cold prefill, and the peak resident memory against the budget')
            [CompletionResult]::new('checkpoints', 'checkpoints', [CompletionResultType]::ParameterValue, 'Checkpoints of recurrent and hybrid models: bytes and capture time of each against the prefill that made them, and the time to first token of a prompt that parts from a held conversation, from the last checkpoint before the parting point')
            [CompletionResult]::new('grammar', 'grammar', [CompletionResultType]::ParameterValue, 'Tool-call constraints on the recorded agents'' tool schemas (tests/agents): the time to build each (llama.cpp''s GBNF, forced and lazy, and llguidance) and its cost per sampled token against unconstrained sampling')
            break
        }
        'kvrun;help;bench;speed' {
            break
        }
        'kvrun;help;bench;restore' {
            break
        }
        'kvrun;help;bench;switch' {
            break
        }
        'kvrun;help;bench;serve' {
            break
        }
        'kvrun;help;bench;batch' {
            break
        }
        'kvrun;help;bench;kv-types' {
            break
        }
        'kvrun;help;bench;ctx' {
            break
        }
        'kvrun;help;bench;swap' {
            break
        }
        'kvrun;help;bench;checkpoints' {
            break
        }
        'kvrun;help;bench;grammar' {
            break
        }
        'kvrun;help;completions' {
            break
        }
        'kvrun;help;man' {
            break
        }
        'kvrun;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
