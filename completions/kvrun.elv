
use builtin;
use str;

set edit:completion:arg-completer[kvrun] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'kvrun'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'kvrun'= {
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand chat 'Chat interactively with a model (line mode; streams tokens as they come)'
            cand run 'Run one prompt and print only the generated text (for scripts and agents)'
            cand serve 'Serve OpenAI- and Anthropic-compatible HTTP; every conversation is a persistent session'
            cand top 'Watch a running `kvrun serve`: the TUI''s memory panel and sessions list, live'
            cand pull 'Download a model: the default models, one by name, a URL, or hf:OWNER/REPO/FILE.gguf'
            cand models 'List the models in kvrun''s models folder'
            cand session 'Save, restore, list, fork, export and import persistent sessions'
            cand gc 'Delete KV pages that no session references any more'
            cand stats 'Memory tiers and devices: the page store, RAM, disk and GPU figures'
            cand bench 'Benchmarks that print tables: prefill/decode speed, session restore'
            cand completions 'Print a shell completion script'
            cand man 'Print the man page (or write one page per subcommand with --dir)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'kvrun;chat'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand --session 'Resume or create a named session; its KV cache is saved after every turn (without it, the chat is an unnamed session, kept too and collected first under the cold budget). A server''s client key names a family of conversations: NAME is its latest, NAME/N its Nth'
            cand --system 'A system prompt for the conversation'
            cand -n 'Largest reply in tokens, so a model that never stops cannot run on [default: 1024]'
            cand --max-tokens 'Largest reply in tokens, so a model that never stops cannot run on [default: 1024]'
            cand --context-overflow 'What to do when the conversation outgrows the context: drop the oldest turns, or stop with an error [default: truncate]'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand --temp 'Temperature; 0 is greedy [default: 0.8]'
            cand --top-k 'Keep only the K most likely tokens; 0 disables [default: 40]'
            cand --top-p 'Nucleus sampling threshold; 1.0 disables [default: 0.95]'
            cand --min-p 'Minimum probability relative to the top token; 0 disables [default: 0.05]'
            cand --repeat-penalty 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]'
            cand --seed 'Random seed [default: a fresh one per run]'
            cand --hot-sessions 'Sessions kept resident in the context at once (switching to one is instant) [default: 4]'
            cand --warm-budget 'RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]'
            cand --cold-budget 'Disk for the page store; past it, pages no session uses go first [default: none]'
            cand --hot-idle 'A session idle this long leaves the context, e.g. 10m; then an elastic context (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto, else never]'
            cand --warm-idle 'Pages unused this long leave RAM, e.g. 1h [default: never]'
            cand --plain 'Line mode even on a terminal'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;run'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand -p 'The prompt text (otherwise --prompt-file, otherwise stdin)'
            cand --prompt 'The prompt text (otherwise --prompt-file, otherwise stdin)'
            cand --prompt-file 'Read the prompt from a file'
            cand --system 'A system prompt (chat mode only)'
            cand -n 'Largest number of tokens to generate; 0 only prefills [default: 256]'
            cand --max-tokens 'Largest number of tokens to generate; 0 only prefills [default: 256]'
            cand --session 'Resume or create a named session: restore its KV, append this turn, generate, save. A server''s client key names a family of conversations: NAME is its latest, NAME/N its Nth'
            cand --logprobs 'Add each generated token''s log-probability (with --json), and the N most likely alternatives'
            cand --tools 'Tools the model may call: a JSON list of OpenAI tool definitions. Calls are parsed from the reply (`tool_calls` in --json)'
            cand --tool-choice 'auto (the model decides), none, required (a call is forced), or a tool''s name (that call is forced) [default: auto]'
            cand --json-schema 'Force the reply to be JSON valid under this JSON schema (a file)'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand --temp 'Temperature; 0 is greedy [default: 0.8]'
            cand --top-k 'Keep only the K most likely tokens; 0 disables [default: 40]'
            cand --top-p 'Nucleus sampling threshold; 1.0 disables [default: 0.95]'
            cand --min-p 'Minimum probability relative to the top token; 0 disables [default: 0.05]'
            cand --repeat-penalty 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]'
            cand --seed 'Random seed [default: a fresh one per run]'
            cand --raw 'Feed the text as-is (plain completion, no chat template)'
            cand --json 'Print one JSON object (text, tokens and timings) instead of the text'
            cand --continue 'Add no input: generate on from where the session stands'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;serve'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand --host 'Address to listen on; anything but a loopback address needs --api-key [default: 127.0.0.1]'
            cand --port 'Port to listen on; 0 picks a free one (the real one is printed) [default: 8080]'
            cand --api-key 'Require this key on every endpoint but /health (`Authorization: Bearer KEY` or `x-api-key: KEY`)'
            cand --parallel 'Sequences decoded together in one batch [default: 4]'
            cand --alias 'The model name responses carry [default: the model''s own name]'
            cand -n 'Largest reply in tokens: a request that asks for more, or sets no limit, gets N, so a model that never stops cannot hold a sequence until the context fills [default: the room the context leaves]'
            cand --max-tokens 'Largest reply in tokens: a request that asks for more, or sets no limit, gets N, so a model that never stops cannot hold a sequence until the context fills [default: the room the context leaves]'
            cand --max-ctx-size 'Largest context --ctx-size auto grows to, in tokens [default: the model''s training context]'
            cand --max-queue 'Requests that may wait for a free sequence; past it, 503 with Retry-After [default: 64]'
            cand --max-body-bytes 'Largest request body, e.g. 32MiB; past it, 413 [default: 32MiB]'
            cand --request-timeout 'Longest time to the start of a response (a stream, once started, runs on), e.g. 10m; 0 turns it off [default: 10m]'
            cand --header-timeout 'Longest time a client may take to send a request''s headers, and the longest a keep-alive connection may idle, e.g. 30s [default: 30s]'
            cand --body-timeout 'Longest time a client may take to send a request''s whole body once its headers are in; past it, 408, e.g. 60s [default: 60s]'
            cand --cors-origin 'Allow browser requests from this origin (repeatable; `*` for any) [default: none, CORS off]'
            cand --durability 'When a finished reply''s save is on disk: `before` its final event (`[DONE]`, `message_stop`, `response.completed`) or body is sent, so a reply the client has read survives a crash (no exit path loses a turn); or `after`, tens of ms sooner and lost to a crash in between. Tokens stream as they come either way [default: before]'
            cand --default-model 'The model a request gets when its `model` names none of the server''s models or aliases; `none` answers those with 404 [default: the config file''s `default-model`, then KVRUN_MODEL, the config file''s `model`, then gemma3 when it is pulled]'
            cand --model-alias 'Another name for a model, or a pattern of names (`claude-haiku-*=smollm2`); repeatable [default: the config file''s `[model-aliases]` table]'
            cand --memory-budget 'Memory every loaded model''s weights, context and compute buffers share, e.g. 8GiB; past it, idle models are unloaded [default: 90% of the RAM available at start, less the warm tier''s budget and 256 MiB of restore buffers]'
            cand --keep-alive 'How long a model stays loaded after its last request, e.g. 5m; 0 unloads at once, -1 never; a request''s `keep_alive` overrides it [default: 5m; -1 with MODEL]'
            cand --swap-wait 'How long a request waits for busy models that hold the memory its model needs; then they stop admitting requests, finish their replies, save and unload, and the models take turns [default: 3s]'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand --temp 'Temperature; 0 is greedy [default: 0.8]'
            cand --top-k 'Keep only the K most likely tokens; 0 disables [default: 40]'
            cand --top-p 'Nucleus sampling threshold; 1.0 disables [default: 0.95]'
            cand --min-p 'Minimum probability relative to the top token; 0 disables [default: 0.05]'
            cand --repeat-penalty 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]'
            cand --seed 'Random seed [default: a fresh one per run]'
            cand --hot-sessions 'Sessions kept resident in the context at once (switching to one is instant) [default: 4]'
            cand --warm-budget 'RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]'
            cand --cold-budget 'Disk for the page store; past it, pages no session uses go first [default: none]'
            cand --hot-idle 'A session idle this long leaves the context, e.g. 10m; then an elastic context (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto, else never]'
            cand --warm-idle 'Pages unused this long leave RAM, e.g. 1h [default: never]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;top'= {
            cand --api-key 'The server''s API key (sent as a bearer token)'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;pull'= {
            cand --sha256 'Expected SHA-256 of the file (hex); a mismatch fails the pull and installs nothing'
            cand --output 'File name to save as in the models folder [default: the URL''s last path segment]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;models'= {
            cand --json 'Print JSON instead of a table'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;session'= {
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand save 'Prefill a document or transcript into a new or existing session and persist it'
            cand restore 'Load a session into a context and check it (with --check), printing the timing'
            cand ls 'List sessions (with --connect, those of a running `kvrun serve` and their tiers)'
            cand show 'Show one session: model, settings, tokens, pages and what they share'
            cand rm 'Delete a session (pages shared with other sessions stay)'
            cand fork 'Copy a session under a new name; instant, copies no page'
            cand export 'Write a session and its pages to one self-contained file'
            cand import 'Read a session from an exported file, validating everything first'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'kvrun;session;save'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand -f 'The document to prefill; `-` reads stdin'
            cand --file 'The document to prefill; `-` reads stdin'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand --raw 'Feed the text as-is instead of as a user message in the chat template'
            cand --json 'Print one JSON object with the counts and timings'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;session;restore'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand --temp 'Temperature; 0 is greedy [default: 0.8]'
            cand --top-k 'Keep only the K most likely tokens; 0 disables [default: 40]'
            cand --top-p 'Nucleus sampling threshold; 1.0 disables [default: 0.95]'
            cand --min-p 'Minimum probability relative to the top token; 0 disables [default: 0.05]'
            cand --repeat-penalty 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]'
            cand --seed 'Random seed [default: a fresh one per run]'
            cand --check 'Load the session, verify it, print the timing and exit'
            cand --json 'json'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;session;ls'= {
            cand --connect 'The server''s URL, e.g. http://127.0.0.1:8080'
            cand --api-key 'The server''s API key (sent as a bearer token)'
            cand --json 'Print JSON'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;session;show'= {
            cand --json 'Print JSON'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;session;rm'= {
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;session;fork'= {
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;session;export'= {
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;session;import'= {
            cand --name 'Import under this name instead of the exported one'
            cand --model 'The session''s model (a path, or a name in the models folder), checked against the session''s fingerprint [default: the model of that fingerprint in the models folder]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;session;help'= {
            cand save 'Prefill a document or transcript into a new or existing session and persist it'
            cand restore 'Load a session into a context and check it (with --check), printing the timing'
            cand ls 'List sessions (with --connect, those of a running `kvrun serve` and their tiers)'
            cand show 'Show one session: model, settings, tokens, pages and what they share'
            cand rm 'Delete a session (pages shared with other sessions stay)'
            cand fork 'Copy a session under a new name; instant, copies no page'
            cand export 'Write a session and its pages to one self-contained file'
            cand import 'Read a session from an exported file, validating everything first'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'kvrun;session;help;save'= {
        }
        &'kvrun;session;help;restore'= {
        }
        &'kvrun;session;help;ls'= {
        }
        &'kvrun;session;help;show'= {
        }
        &'kvrun;session;help;rm'= {
        }
        &'kvrun;session;help;fork'= {
        }
        &'kvrun;session;help;export'= {
        }
        &'kvrun;session;help;import'= {
        }
        &'kvrun;session;help;help'= {
        }
        &'kvrun;gc'= {
            cand --json 'Print JSON'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;stats'= {
            cand --connect 'The server''s URL, e.g. http://127.0.0.1:8080'
            cand --api-key 'The server''s API key (sent as a bearer token)'
            cand --hot-sessions 'Sessions kept resident in the context at once (switching to one is instant) [default: 4]'
            cand --warm-budget 'RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]'
            cand --cold-budget 'Disk for the page store; past it, pages no session uses go first [default: none]'
            cand --hot-idle 'A session idle this long leaves the context, e.g. 10m; then an elastic context (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto, else never]'
            cand --warm-idle 'Pages unused this long leave RAM, e.g. 1h [default: never]'
            cand --json 'Print JSON'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench'= {
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand speed 'Prefill and decode tokens per second, kvrun''s schedule next to llama.cpp''s'
            cand restore 'Session restore against cold prefill and llama.cpp''s own state files'
            cand switch 'Switching between many sessions through the hot, warm and cold tiers'
            cand serve '`kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call, next turn, after a restart), the server''s overhead, concurrent decode'
            cand batch 'Concurrent streams through the service engine against llama.cpp''s batched decode'
            cand kv-types 'KV element types against f16: bytes per token, restore time, greedy agreement and log-probability drift'
            cand ctx 'The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same ceiling: the server''s resident memory idle and holding each length, and what a growth step paused'
            cand swap '`kvrun serve` of two models under a budget that holds one: what a swap costs (unload with its saves, then load; from the page cache and cold) against a fresh process, a returning conversation''s time to first token against a cold prefill, and the peak resident memory against the budget'
            cand checkpoints 'Checkpoints of recurrent and hybrid models: bytes and capture time of each against the prefill that made them, and the time to first token of a prompt that parts from a held conversation, from the last checkpoint before the parting point'
            cand grammar 'Tool-call constraints on the recorded agents'' tool schemas (tests/agents): the time to build each (llama.cpp''s GBNF, forced and lazy, and llguidance) and its cost per sampled token against unconstrained sampling'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'kvrun;bench;speed'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand --prompt-tokens 'Prompt lengths to measure, in tokens'
            cand --decode-tokens 'Tokens to generate for the decode figure'
            cand --repeat 'Repetitions per row; the table shows the median'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;restore'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand --tokens 'Session lengths to measure, in tokens'
            cand --share-sessions 'Sessions in the prefix-sharing row (they share a --share-prefix-token prefix)'
            cand --share-prefix 'share-prefix'
            cand --shape 'Instead of MODEL, benchmark a generated random-weight model of this shape (no download; written into the benchmark''s temp folder unless --shape-dir is given)'
            cand --shape-dir 'Keep the generated --shape model in this folder, and reuse it when already there'
            cand --repeat 'Times each restore is measured (llama.cpp''s load, kvrun''s in process and in a fresh process, the cold read), alternating, each from a cold page cache, then llama.cpp''s load and kvrun''s restore again from a warm one; medians are shown'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand --synthetic 'Build each session from deterministic noise KV (no prefill) and time restore only: for lengths whose prefill would take hours; the rows'' values are not the model''s'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;switch'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand --sessions 'Sessions to switch between'
            cand --tokens 'Tokens in each session'
            cand --rounds 'Rounds of switching through all sessions'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;serve'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand --prompt-tokens 'Tokens in the agent-shaped prompt (system blocks and tool schemas)'
            cand --decode-tokens 'Tokens generated per call'
            cand --streams 'Concurrent streams for the aggregate decode rows'
            cand --llama-server 'A llama-server binary to run the same conversation against, side by side (same model, threads, context, one slot, greedy); prints that table instead of the others. Build it from the pinned llama.cpp as the README''s "Serving over HTTP" benchmark says'
            cand --repeat 'Times each side-by-side row is measured, each from a fresh home; medians are shown'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;batch'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand --streams 'Concurrent streams to measure'
            cand --prompt-tokens 'Prompt tokens of each stream'
            cand --decode-tokens 'Tokens each stream generates'
            cand --rounds 'Measurements of each stream count, the service''s and llama.cpp''s alternating; the table shows the best throughput (the least disturbed on a shared machine) and the slowest time to first token'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;kv-types'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand --types 'KV types to compare; f16, the reference, is always measured'
            cand --tokens 'Session lengths to measure, in tokens'
            cand --decode-tokens 'Greedy tokens generated after each session (and scored under teacher forcing)'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand --tiny 'Measure kvrun''s tiny random-weight llama test model (written into the benchmark''s folder) instead of --model'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;ctx'= {
            cand --chat-template 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file''s `chat-template`, then the model''s own, then its architecture''s default]'
            cand --tokens 'Tokens one conversation holds at each measurement (it grows from one to the next)'
            cand --max-ctx-size 'The ceiling of the elastic context and the size of the fixed one [default: the model''s training context]'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand --tiny 'Measure kvrun''s tiny random-weight llama test model (written into the benchmark''s folder, with a training context of the ceiling or 32768) instead of --model'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;swap'= {
            cand --models 'The two models, each a .gguf path, a name in the models folder, or smollm2/gemma3'
            cand --prompt-tokens 'Prompt tokens of each conversation (about: the text is tokenized by each model)'
            cand --rounds 'Times each model is swapped back in'
            cand --budget 'The memory budget [default: the larger model''s measured charge, plus 5%]'
            cand --clients 'Mixed load: clients per model looping on both models at once'
            cand --mixed-secs 'Mixed load: seconds the clients loop'
            cand --swap-wait 'Mixed load: the server''s `--swap-wait` [default: serve''s]'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;checkpoints'= {
            cand --tokens 'Prompt tokens of each measurement'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;grammar'= {
            cand --models 'Models, each a .gguf path, a name in the models folder, or smollm2/gemma3'
            cand --agents 'The folder of recorded agent requests (claude-code-messages.json, codex-responses.json, opencode-main.json)'
            cand --tokens 'Tokens generated under each constraint, at most (a call may end sooner)'
            cand --repeat 'Builds of each constraint; the table shows the median'
            cand -c 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand --ctx-size 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model''s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model''s training context]'
            cand -t 'CPU threads [default: the number of cores]'
            cand --threads 'CPU threads [default: the number of cores]'
            cand --gpu-layers 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]'
            cand -b 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --batch-size 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]'
            cand --kv-type 'KV cache element type [default: f16]'
            cand --flash-attn 'Flash attention [default: auto]'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;bench;help'= {
            cand speed 'Prefill and decode tokens per second, kvrun''s schedule next to llama.cpp''s'
            cand restore 'Session restore against cold prefill and llama.cpp''s own state files'
            cand switch 'Switching between many sessions through the hot, warm and cold tiers'
            cand serve '`kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call, next turn, after a restart), the server''s overhead, concurrent decode'
            cand batch 'Concurrent streams through the service engine against llama.cpp''s batched decode'
            cand kv-types 'KV element types against f16: bytes per token, restore time, greedy agreement and log-probability drift'
            cand ctx 'The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same ceiling: the server''s resident memory idle and holding each length, and what a growth step paused'
            cand swap '`kvrun serve` of two models under a budget that holds one: what a swap costs (unload with its saves, then load; from the page cache and cold) against a fresh process, a returning conversation''s time to first token against a cold prefill, and the peak resident memory against the budget'
            cand checkpoints 'Checkpoints of recurrent and hybrid models: bytes and capture time of each against the prefill that made them, and the time to first token of a prompt that parts from a held conversation, from the last checkpoint before the parting point'
            cand grammar 'Tool-call constraints on the recorded agents'' tool schemas (tests/agents): the time to build each (llama.cpp''s GBNF, forced and lazy, and llguidance) and its cost per sampled token against unconstrained sampling'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'kvrun;bench;help;speed'= {
        }
        &'kvrun;bench;help;restore'= {
        }
        &'kvrun;bench;help;switch'= {
        }
        &'kvrun;bench;help;serve'= {
        }
        &'kvrun;bench;help;batch'= {
        }
        &'kvrun;bench;help;kv-types'= {
        }
        &'kvrun;bench;help;ctx'= {
        }
        &'kvrun;bench;help;swap'= {
        }
        &'kvrun;bench;help;checkpoints'= {
        }
        &'kvrun;bench;help;grammar'= {
        }
        &'kvrun;bench;help;help'= {
        }
        &'kvrun;completions'= {
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;man'= {
            cand --dir 'Write kvrun.1 and one page per subcommand into this folder instead of printing'
            cand -v 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand --verbose 'Show more diagnostics on stderr (-v: info and llama.cpp''s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
            cand -q 'Hide progress bars and notes; errors still print'
            cand --quiet 'Hide progress bars and notes; errors still print'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'kvrun;help'= {
            cand chat 'Chat interactively with a model (line mode; streams tokens as they come)'
            cand run 'Run one prompt and print only the generated text (for scripts and agents)'
            cand serve 'Serve OpenAI- and Anthropic-compatible HTTP; every conversation is a persistent session'
            cand top 'Watch a running `kvrun serve`: the TUI''s memory panel and sessions list, live'
            cand pull 'Download a model: the default models, one by name, a URL, or hf:OWNER/REPO/FILE.gguf'
            cand models 'List the models in kvrun''s models folder'
            cand session 'Save, restore, list, fork, export and import persistent sessions'
            cand gc 'Delete KV pages that no session references any more'
            cand stats 'Memory tiers and devices: the page store, RAM, disk and GPU figures'
            cand bench 'Benchmarks that print tables: prefill/decode speed, session restore'
            cand completions 'Print a shell completion script'
            cand man 'Print the man page (or write one page per subcommand with --dir)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'kvrun;help;chat'= {
        }
        &'kvrun;help;run'= {
        }
        &'kvrun;help;serve'= {
        }
        &'kvrun;help;top'= {
        }
        &'kvrun;help;pull'= {
        }
        &'kvrun;help;models'= {
        }
        &'kvrun;help;session'= {
            cand save 'Prefill a document or transcript into a new or existing session and persist it'
            cand restore 'Load a session into a context and check it (with --check), printing the timing'
            cand ls 'List sessions (with --connect, those of a running `kvrun serve` and their tiers)'
            cand show 'Show one session: model, settings, tokens, pages and what they share'
            cand rm 'Delete a session (pages shared with other sessions stay)'
            cand fork 'Copy a session under a new name; instant, copies no page'
            cand export 'Write a session and its pages to one self-contained file'
            cand import 'Read a session from an exported file, validating everything first'
        }
        &'kvrun;help;session;save'= {
        }
        &'kvrun;help;session;restore'= {
        }
        &'kvrun;help;session;ls'= {
        }
        &'kvrun;help;session;show'= {
        }
        &'kvrun;help;session;rm'= {
        }
        &'kvrun;help;session;fork'= {
        }
        &'kvrun;help;session;export'= {
        }
        &'kvrun;help;session;import'= {
        }
        &'kvrun;help;gc'= {
        }
        &'kvrun;help;stats'= {
        }
        &'kvrun;help;bench'= {
            cand speed 'Prefill and decode tokens per second, kvrun''s schedule next to llama.cpp''s'
            cand restore 'Session restore against cold prefill and llama.cpp''s own state files'
            cand switch 'Switching between many sessions through the hot, warm and cold tiers'
            cand serve '`kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call, next turn, after a restart), the server''s overhead, concurrent decode'
            cand batch 'Concurrent streams through the service engine against llama.cpp''s batched decode'
            cand kv-types 'KV element types against f16: bytes per token, restore time, greedy agreement and log-probability drift'
            cand ctx 'The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same ceiling: the server''s resident memory idle and holding each length, and what a growth step paused'
            cand swap '`kvrun serve` of two models under a budget that holds one: what a swap costs (unload with its saves, then load; from the page cache and cold) against a fresh process, a returning conversation''s time to first token against a cold prefill, and the peak resident memory against the budget'
            cand checkpoints 'Checkpoints of recurrent and hybrid models: bytes and capture time of each against the prefill that made them, and the time to first token of a prompt that parts from a held conversation, from the last checkpoint before the parting point'
            cand grammar 'Tool-call constraints on the recorded agents'' tool schemas (tests/agents): the time to build each (llama.cpp''s GBNF, forced and lazy, and llguidance) and its cost per sampled token against unconstrained sampling'
        }
        &'kvrun;help;bench;speed'= {
        }
        &'kvrun;help;bench;restore'= {
        }
        &'kvrun;help;bench;switch'= {
        }
        &'kvrun;help;bench;serve'= {
        }
        &'kvrun;help;bench;batch'= {
        }
        &'kvrun;help;bench;kv-types'= {
        }
        &'kvrun;help;bench;ctx'= {
        }
        &'kvrun;help;bench;swap'= {
        }
        &'kvrun;help;bench;checkpoints'= {
        }
        &'kvrun;help;bench;grammar'= {
        }
        &'kvrun;help;completions'= {
        }
        &'kvrun;help;man'= {
        }
        &'kvrun;help;help'= {
        }
    ]
    $completions[$command]
}
