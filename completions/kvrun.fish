# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_kvrun_global_optspecs
    string join \n v/verbose q/quiet h/help V/version
end

function __fish_kvrun_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_kvrun_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_kvrun_using_subcommand
    set -l cmd (__fish_kvrun_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c kvrun -n "__fish_kvrun_needs_command" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_needs_command" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kvrun -n "__fish_kvrun_needs_command" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "chat" -d 'Chat interactively with a model (line mode; streams tokens as they come)'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "run" -d 'Run one prompt and print only the generated text (for scripts and agents)'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "serve" -d 'Serve OpenAI- and Anthropic-compatible HTTP; every conversation is a persistent session'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "top" -d 'Watch a running `kvrun serve`: the TUI\'s memory panel and sessions list, live'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "pull" -d 'Download a model: the default models, one by name, a URL, or hf:OWNER/REPO/FILE.gguf'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "models" -d 'List the models in kvrun\'s models folder'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "session" -d 'Save, restore, list, fork, export and import persistent sessions'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "gc" -d 'Delete KV pages that no session references any more'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "stats" -d 'Memory tiers and devices: the page store, RAM, disk and GPU figures'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "bench" -d 'Benchmarks that print tables: prefill/decode speed, session restore'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "man" -d 'Print the man page (or write one page per subcommand with --dir)'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l session -d 'Resume or create a named session; its KV cache is saved after every turn (without it, the chat is an unnamed session, kept too and collected first under the cold budget). A server\'s client key names a family of conversations: NAME is its latest, NAME/N its Nth' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l system -d 'A system prompt for the conversation' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s n -l max-tokens -d 'Largest reply in tokens, so a model that never stops cannot run on [default: 1024]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l context-overflow -d 'What to do when the conversation outgrows the context: drop the oldest turns, or stop with an error [default: truncate]' -r -f -a "truncate\t''
error\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l temp -d 'Temperature; 0 is greedy [default: 0.8]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l top-k -d 'Keep only the K most likely tokens; 0 disables [default: 40]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l top-p -d 'Nucleus sampling threshold; 1.0 disables [default: 0.95]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l min-p -d 'Minimum probability relative to the top token; 0 disables [default: 0.05]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l repeat-penalty -d 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l seed -d 'Random seed [default: a fresh one per run]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l hot-sessions -d 'Sessions kept resident in the context at once (switching to one is instant) [default: 4]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l warm-budget -d 'RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l cold-budget -d 'Disk for the page store; past it, pages no session uses go first [default: none]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l hot-idle -d 'A session idle this long leaves the context, e.g. 10m; then an elastic context (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto, else never]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l warm-idle -d 'Pages unused this long leave RAM, e.g. 1h [default: never]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l plain -d 'Line mode even on a terminal'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s p -l prompt -d 'The prompt text (otherwise --prompt-file, otherwise stdin)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l prompt-file -d 'Read the prompt from a file' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l system -d 'A system prompt (chat mode only)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s n -l max-tokens -d 'Largest number of tokens to generate; 0 only prefills [default: 256]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l session -d 'Resume or create a named session: restore its KV, append this turn, generate, save. A server\'s client key names a family of conversations: NAME is its latest, NAME/N its Nth' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l logprobs -d 'Add each generated token\'s log-probability (with --json), and the N most likely alternatives' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l tools -d 'Tools the model may call: a JSON list of OpenAI tool definitions. Calls are parsed from the reply (`tool_calls` in --json)' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l tool-choice -d 'auto (the model decides), none, required (a call is forced), or a tool\'s name (that call is forced) [default: auto]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l json-schema -d 'Force the reply to be JSON valid under this JSON schema (a file)' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l temp -d 'Temperature; 0 is greedy [default: 0.8]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l top-k -d 'Keep only the K most likely tokens; 0 disables [default: 40]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l top-p -d 'Nucleus sampling threshold; 1.0 disables [default: 0.95]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l min-p -d 'Minimum probability relative to the top token; 0 disables [default: 0.05]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l repeat-penalty -d 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l seed -d 'Random seed [default: a fresh one per run]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l raw -d 'Feed the text as-is (plain completion, no chat template)'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l json -d 'Print one JSON object (text, tokens and timings) instead of the text'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l continue -d 'Add no input: generate on from where the session stands'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l host -d 'Address to listen on; anything but a loopback address needs --api-key [default: 127.0.0.1]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l port -d 'Port to listen on; 0 picks a free one (the real one is printed) [default: 8080]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l api-key -d 'Require this key on every endpoint but /health (`Authorization: Bearer KEY` or `x-api-key: KEY`)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l parallel -d 'Sequences decoded together in one batch [default: 4]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l alias -d 'The model name responses carry [default: the model\'s own name]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -s n -l max-tokens -d 'Largest reply in tokens: a request that asks for more, or sets no limit, gets N, so a model that never stops cannot hold a sequence until the context fills [default: the room the context leaves]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l max-ctx-size -d 'Largest context --ctx-size auto grows to, in tokens [default: the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l max-queue -d 'Requests that may wait for a free sequence; past it, 503 with Retry-After [default: 64]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l max-body-bytes -d 'Largest request body, e.g. 32MiB; past it, 413 [default: 32MiB]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l request-timeout -d 'Longest time to the start of a response (a stream, once started, runs on), e.g. 10m; 0 turns it off [default: 10m]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l header-timeout -d 'Longest time a client may take to send a request\'s headers, and the longest a keep-alive connection may idle, e.g. 30s [default: 30s]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l body-timeout -d 'Longest time a client may take to send a request\'s whole body once its headers are in; past it, 408, e.g. 60s [default: 60s]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l cors-origin -d 'Allow browser requests from this origin (repeatable; `*` for any) [default: none, CORS off]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l durability -d 'When a finished reply\'s save is on disk: `before` its final event (`[DONE]`, `message_stop`, `response.completed`) or body is sent, so a reply the client has read survives a crash (no exit path loses a turn); or `after`, tens of ms sooner and lost to a crash in between. Tokens stream as they come either way [default: before]' -r -f -a "before\t''
after\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l default-model -d 'The model a request gets when its `model` names none of the server\'s models or aliases; `none` answers those with 404 [default: the config file\'s `default-model`, then KVRUN_MODEL, the config file\'s `model`, then gemma3 when it is pulled]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l model-alias -d 'Another name for a model, or a pattern of names (`claude-haiku-*=smollm2`); repeatable [default: the config file\'s `[model-aliases]` table]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l memory-budget -d 'Memory every loaded model\'s weights, context and compute buffers share, e.g. 8GiB; past it, idle models are unloaded [default: 90% of the RAM available at start, less the warm tier\'s budget and 256 MiB of restore buffers]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l keep-alive -d 'How long a model stays loaded after its last request, e.g. 5m; 0 unloads at once, -1 never; a request\'s `keep_alive` overrides it [default: 5m; -1 with MODEL]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l swap-wait -d 'How long a request waits for busy models that hold the memory its model needs; then they stop admitting requests, finish their replies, save and unload, and the models take turns [default: 3s]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l temp -d 'Temperature; 0 is greedy [default: 0.8]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l top-k -d 'Keep only the K most likely tokens; 0 disables [default: 40]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l top-p -d 'Nucleus sampling threshold; 1.0 disables [default: 0.95]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l min-p -d 'Minimum probability relative to the top token; 0 disables [default: 0.05]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l repeat-penalty -d 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l seed -d 'Random seed [default: a fresh one per run]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l hot-sessions -d 'Sessions kept resident in the context at once (switching to one is instant) [default: 4]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l warm-budget -d 'RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l cold-budget -d 'Disk for the page store; past it, pages no session uses go first [default: none]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l hot-idle -d 'A session idle this long leaves the context, e.g. 10m; then an elastic context (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto, else never]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -l warm-idle -d 'Pages unused this long leave RAM, e.g. 1h [default: never]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand serve" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand top" -l api-key -d 'The server\'s API key (sent as a bearer token)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand top" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand top" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand top" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand top" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand pull" -l sha256 -d 'Expected SHA-256 of the file (hex); a mismatch fails the pull and installs nothing' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand pull" -l output -d 'File name to save as in the models folder [default: the URL\'s last path segment]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand pull" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand pull" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand pull" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand pull" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand models" -l json -d 'Print JSON instead of a table'
complete -c kvrun -n "__fish_kvrun_using_subcommand models" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand models" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand models" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand models" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -f -a "save" -d 'Prefill a document or transcript into a new or existing session and persist it'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -f -a "restore" -d 'Load a session into a context and check it (with --check), printing the timing'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -f -a "ls" -d 'List sessions (with --connect, those of a running `kvrun serve` and their tiers)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -f -a "show" -d 'Show one session: model, settings, tokens, pages and what they share'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -f -a "rm" -d 'Delete a session (pages shared with other sessions stay)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -f -a "fork" -d 'Copy a session under a new name; instant, copies no page'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -f -a "export" -d 'Write a session and its pages to one self-contained file'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -f -a "import" -d 'Read a session from an exported file, validating everything first'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and not __fish_seen_subcommand_from save restore ls show rm fork export import help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -s f -l file -d 'The document to prefill; `-` reads stdin' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -l raw -d 'Feed the text as-is instead of as a user message in the chat template'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -l json -d 'Print one JSON object with the counts and timings'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from save" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l temp -d 'Temperature; 0 is greedy [default: 0.8]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l top-k -d 'Keep only the K most likely tokens; 0 disables [default: 40]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l top-p -d 'Nucleus sampling threshold; 1.0 disables [default: 0.95]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l min-p -d 'Minimum probability relative to the top token; 0 disables [default: 0.05]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l repeat-penalty -d 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l seed -d 'Random seed [default: a fresh one per run]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l check -d 'Load the session, verify it, print the timing and exit'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -l json
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from restore" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from ls" -l connect -d 'The server\'s URL, e.g. http://127.0.0.1:8080' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from ls" -l api-key -d 'The server\'s API key (sent as a bearer token)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from ls" -l json -d 'Print JSON'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from ls" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from ls" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from ls" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from ls" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from show" -l json -d 'Print JSON'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from show" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from show" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from rm" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from rm" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from rm" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from rm" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from fork" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from fork" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from fork" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from fork" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from export" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from export" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from export" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from import" -l name -d 'Import under this name instead of the exported one' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from import" -l model -d 'The session\'s model (a path, or a name in the models folder), checked against the session\'s fingerprint [default: the model of that fingerprint in the models folder]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from import" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from import" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from import" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from import" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "save" -d 'Prefill a document or transcript into a new or existing session and persist it'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "restore" -d 'Load a session into a context and check it (with --check), printing the timing'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "ls" -d 'List sessions (with --connect, those of a running `kvrun serve` and their tiers)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show one session: model, settings, tokens, pages and what they share'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "rm" -d 'Delete a session (pages shared with other sessions stay)'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "fork" -d 'Copy a session under a new name; instant, copies no page'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "export" -d 'Write a session and its pages to one self-contained file'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "import" -d 'Read a session from an exported file, validating everything first'
complete -c kvrun -n "__fish_kvrun_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kvrun -n "__fish_kvrun_using_subcommand gc" -l json -d 'Print JSON'
complete -c kvrun -n "__fish_kvrun_using_subcommand gc" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand gc" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand gc" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand gc" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -l connect -d 'The server\'s URL, e.g. http://127.0.0.1:8080' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -l api-key -d 'The server\'s API key (sent as a bearer token)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -l hot-sessions -d 'Sessions kept resident in the context at once (switching to one is instant) [default: 4]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -l warm-budget -d 'RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -l cold-budget -d 'Disk for the page store; past it, pages no session uses go first [default: none]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -l hot-idle -d 'A session idle this long leaves the context, e.g. 10m; then an elastic context (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto, else never]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -l warm-idle -d 'Pages unused this long leave RAM, e.g. 1h [default: never]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -l json -d 'Print JSON'
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand stats" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "speed" -d 'Prefill and decode tokens per second, kvrun\'s schedule next to llama.cpp\'s'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "restore" -d 'Session restore against cold prefill and llama.cpp\'s own state files'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "switch" -d 'Switching between many sessions through the hot, warm and cold tiers'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "serve" -d '`kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call, next turn, after a restart), the server\'s overhead, concurrent decode'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "batch" -d 'Concurrent streams through the service engine against llama.cpp\'s batched decode'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "kv-types" -d 'KV element types against f16: bytes per token, restore time, greedy agreement and log-probability drift'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "ctx" -d 'The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same ceiling: the server\'s resident memory idle and holding each length, and what a growth step paused'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "swap" -d '`kvrun serve` of two models under a budget that holds one: what a swap costs (unload with its saves, then load; from the page cache and cold) against a fresh process, a returning conversation\'s time to first token against a cold prefill, and the peak resident memory against the budget'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "checkpoints" -d 'Checkpoints of recurrent and hybrid models: bytes and capture time of each against the prefill that made them, and the time to first token of a prompt that parts from a held conversation, from the last checkpoint before the parting point'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "grammar" -d 'Tool-call constraints on the recorded agents\' tool schemas (tests/agents): the time to build each (llama.cpp\'s GBNF, forced and lazy, and llguidance) and its cost per sampled token against unconstrained sampling'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and not __fish_seen_subcommand_from speed restore switch serve batch kv-types ctx swap checkpoints grammar help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -l prompt-tokens -d 'Prompt lengths to measure, in tokens' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -l decode-tokens -d 'Tokens to generate for the decode figure' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -l repeat -d 'Repetitions per row; the table shows the median' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from speed" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l tokens -d 'Session lengths to measure, in tokens' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l share-sessions -d 'Sessions in the prefix-sharing row (they share a --share-prefix-token prefix)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l share-prefix -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l shape -d 'Instead of MODEL, benchmark a generated random-weight model of this shape (no download; written into the benchmark\'s temp folder unless --shape-dir is given)' -r -f -a "tiny\t'The tests\' tiny random llama (4 layers, 1 KiB of KV per token) with a 64k context'
llama-8b\t'An 8B llama\'s shape (32 layers, 4096 wide, 8 KV heads of 128, FFN 14336), random Q4_0 weights: about 3.9 GB, 128 KiB of KV per token'
llama-8b-narrow-ffn\t'The same KV shape with a 512-wide FFN: about a fifth of the weights'
qwen35-27b-cache\t'Qwen3.5-27B\'s hybrid cache (16 attention layers: 64 KiB of KV per token; 48 gated delta-net layers: 150 MiB of state) in a narrow model (256-wide stream, 4 query heads, 512-wide FFN), random f16 weights: about 0.6 GiB'
granite-4-h-small-cache\t'Granite-4.0-H-Small\'s hybrid cache (4 attention layers: 16 KiB of KV per token; 36 Mamba2 layers: 146 MiB of state) in a narrow model (256-wide stream, 512-wide FFN), random f16 weights: about 0.2 GiB'"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l shape-dir -d 'Keep the generated --shape model in this folder, and reuse it when already there' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l repeat -d 'Times each restore is measured (llama.cpp\'s load, kvrun\'s in process and in a fresh process, the cold read), alternating, each from a cold page cache, then llama.cpp\'s load and kvrun\'s restore again from a warm one; medians are shown' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -l synthetic -d 'Build each session from deterministic noise KV (no prefill) and time restore only: for lengths whose prefill would take hours; the rows\' values are not the model\'s'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from restore" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -l sessions -d 'Sessions to switch between' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -l tokens -d 'Tokens in each session' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -l rounds -d 'Rounds of switching through all sessions' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from switch" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -l prompt-tokens -d 'Tokens in the agent-shaped prompt (system blocks and tool schemas)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -l decode-tokens -d 'Tokens generated per call' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -l streams -d 'Concurrent streams for the aggregate decode rows' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -l llama-server -d 'A llama-server binary to run the same conversation against, side by side (same model, threads, context, one slot, greedy); prints that table instead of the others. Build it from the pinned llama.cpp as the README\'s "Serving over HTTP" benchmark says' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -l repeat -d 'Times each side-by-side row is measured, each from a fresh home; medians are shown' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from serve" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -l streams -d 'Concurrent streams to measure' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -l prompt-tokens -d 'Prompt tokens of each stream' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -l decode-tokens -d 'Tokens each stream generates' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -l rounds -d 'Measurements of each stream count, the service\'s and llama.cpp\'s alternating; the table shows the best throughput (the least disturbed on a shared machine) and the slowest time to first token' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from batch" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -l types -d 'KV types to compare; f16, the reference, is always measured' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -l tokens -d 'Session lengths to measure, in tokens' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -l decode-tokens -d 'Greedy tokens generated after each session (and scored under teacher forcing)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -l tiny -d 'Measure kvrun\'s tiny random-weight llama test model (written into the benchmark\'s folder) instead of --model'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from kv-types" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -l chat-template -d 'Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config file\'s `chat-template`, then the model\'s own, then its architecture\'s default]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -l tokens -d 'Tokens one conversation holds at each measurement (it grows from one to the next)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -l max-ctx-size -d 'The ceiling of the elastic context and the size of the fixed one [default: the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -l tiny -d 'Measure kvrun\'s tiny random-weight llama test model (written into the benchmark\'s folder, with a training context of the ceiling or 32768) instead of --model'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from ctx" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l models -d 'The two models, each a .gguf path, a name in the models folder, or smollm2/gemma3' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l prompt-tokens -d 'Prompt tokens of each conversation (about: the text is tokenized by each model)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l rounds -d 'Times each model is swapped back in' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l budget -d 'The memory budget [default: the larger model\'s measured charge, plus 5%]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l clients -d 'Mixed load: clients per model looping on both models at once' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l mixed-secs -d 'Mixed load: seconds the clients loop' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l swap-wait -d 'Mixed load: the server\'s `--swap-wait` [default: serve\'s]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from swap" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -l tokens -d 'Prompt tokens of each measurement' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from checkpoints" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -l models -d 'Models, each a .gguf path, a name in the models folder, or smollm2/gemma3' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -l agents -d 'The folder of recorded agent requests (claude-code-messages.json, codex-responses.json, opencode-main.json)' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -l tokens -d 'Tokens generated under each constraint, at most (a call may end sooner)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -l repeat -d 'Builds of each constraint; the table shows the median' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -s c -l ctx-size -d 'Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to --max-ctx-size, kvrun chat up to the model\'s training context; other commands take 8192) [default: auto for kvrun serve, else 8192; capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -s b -l batch-size -d 'Largest prompt batch in tokens: whole KV pages above one page; one page on sliding-window, recurrent and hybrid models. Restores round down to a batch start to recompute exactly [default: 512]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from grammar" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "speed" -d 'Prefill and decode tokens per second, kvrun\'s schedule next to llama.cpp\'s'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "restore" -d 'Session restore against cold prefill and llama.cpp\'s own state files'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "switch" -d 'Switching between many sessions through the hot, warm and cold tiers'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "serve" -d '`kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call, next turn, after a restart), the server\'s overhead, concurrent decode'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "batch" -d 'Concurrent streams through the service engine against llama.cpp\'s batched decode'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "kv-types" -d 'KV element types against f16: bytes per token, restore time, greedy agreement and log-probability drift'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "ctx" -d 'The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same ceiling: the server\'s resident memory idle and holding each length, and what a growth step paused'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "swap" -d '`kvrun serve` of two models under a budget that holds one: what a swap costs (unload with its saves, then load; from the page cache and cold) against a fresh process, a returning conversation\'s time to first token against a cold prefill, and the peak resident memory against the budget'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "checkpoints" -d 'Checkpoints of recurrent and hybrid models: bytes and capture time of each against the prefill that made them, and the time to first token of a prompt that parts from a held conversation, from the last checkpoint before the parting point'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "grammar" -d 'Tool-call constraints on the recorded agents\' tool schemas (tests/agents): the time to build each (llama.cpp\'s GBNF, forced and lazy, and llguidance) and its cost per sampled token against unconstrained sampling'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kvrun -n "__fish_kvrun_using_subcommand completions" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand completions" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand completions" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand completions" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -l dir -d 'Write kvrun.1 and one page per subcommand into this folder instead of printing' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "chat" -d 'Chat interactively with a model (line mode; streams tokens as they come)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "run" -d 'Run one prompt and print only the generated text (for scripts and agents)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "serve" -d 'Serve OpenAI- and Anthropic-compatible HTTP; every conversation is a persistent session'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "top" -d 'Watch a running `kvrun serve`: the TUI\'s memory panel and sessions list, live'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "pull" -d 'Download a model: the default models, one by name, a URL, or hf:OWNER/REPO/FILE.gguf'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "models" -d 'List the models in kvrun\'s models folder'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "session" -d 'Save, restore, list, fork, export and import persistent sessions'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "gc" -d 'Delete KV pages that no session references any more'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "stats" -d 'Memory tiers and devices: the page store, RAM, disk and GPU figures'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "bench" -d 'Benchmarks that print tables: prefill/decode speed, session restore'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "completions" -d 'Print a shell completion script'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "man" -d 'Print the man page (or write one page per subcommand with --dir)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run serve top pull models session gc stats bench completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "save" -d 'Prefill a document or transcript into a new or existing session and persist it'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "restore" -d 'Load a session into a context and check it (with --check), printing the timing'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "ls" -d 'List sessions (with --connect, those of a running `kvrun serve` and their tiers)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "show" -d 'Show one session: model, settings, tokens, pages and what they share'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "rm" -d 'Delete a session (pages shared with other sessions stay)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "fork" -d 'Copy a session under a new name; instant, copies no page'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "export" -d 'Write a session and its pages to one self-contained file'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "import" -d 'Read a session from an exported file, validating everything first'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "speed" -d 'Prefill and decode tokens per second, kvrun\'s schedule next to llama.cpp\'s'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "restore" -d 'Session restore against cold prefill and llama.cpp\'s own state files'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "switch" -d 'Switching between many sessions through the hot, warm and cold tiers'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "serve" -d '`kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call, next turn, after a restart), the server\'s overhead, concurrent decode'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "batch" -d 'Concurrent streams through the service engine against llama.cpp\'s batched decode'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "kv-types" -d 'KV element types against f16: bytes per token, restore time, greedy agreement and log-probability drift'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "ctx" -d 'The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same ceiling: the server\'s resident memory idle and holding each length, and what a growth step paused'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "swap" -d '`kvrun serve` of two models under a budget that holds one: what a swap costs (unload with its saves, then load; from the page cache and cold) against a fresh process, a returning conversation\'s time to first token against a cold prefill, and the peak resident memory against the budget'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "checkpoints" -d 'Checkpoints of recurrent and hybrid models: bytes and capture time of each against the prefill that made them, and the time to first token of a prompt that parts from a held conversation, from the last checkpoint before the parting point'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and __fish_seen_subcommand_from bench" -f -a "grammar" -d 'Tool-call constraints on the recorded agents\' tool schemas (tests/agents): the time to build each (llama.cpp\'s GBNF, forced and lazy, and llguidance) and its cost per sampled token against unconstrained sampling'
