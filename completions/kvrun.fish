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
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "pull" -d 'Download a model: the default model, a URL, or hf:OWNER/REPO/FILE.gguf'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "models" -d 'List the models in kvrun\'s models folder'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "bench" -d 'Measure prefill and decode speed on a model (prints a table)'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "man" -d 'Print the man page (or write one page per subcommand with --dir)'
complete -c kvrun -n "__fish_kvrun_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l system -d 'A system prompt for the conversation' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s n -l max-tokens -d 'Largest reply in tokens [default: until the model stops or the context is full]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l context-overflow -d 'What to do when the conversation outgrows the context: drop the oldest turns, or stop with an error [default: truncate]' -r -f -a "truncate\t''
error\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s c -l ctx-size -d 'Context size in tokens [default: 8192, capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s b -l batch-size -d 'Largest prompt batch in tokens; batches never cross a KV page boundary [default: 256]' -r
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
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -l plain -d 'Line mode even on a terminal'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand chat" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s p -l prompt -d 'The prompt text (otherwise --prompt-file, otherwise stdin)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l prompt-file -d 'Read the prompt from a file' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l system -d 'A system prompt (chat mode only)' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s n -l max-tokens -d 'Largest number of tokens to generate; 0 only prefills [default: 256]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s c -l ctx-size -d 'Context size in tokens [default: 8192, capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s b -l batch-size -d 'Largest prompt batch in tokens; batches never cross a KV page boundary [default: 256]' -r
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
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand run" -s V -l version -d 'Print version'
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
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -l prompt-tokens -d 'Prompt lengths to measure, in tokens' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -l decode-tokens -d 'Tokens to generate for the decode figure' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -l repeat -d 'Repetitions per row; the table shows the median' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -s c -l ctx-size -d 'Context size in tokens [default: 8192, capped at the model\'s training context]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -s t -l threads -d 'CPU threads [default: the number of cores]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -l gpu-layers -d 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -s b -l batch-size -d 'Largest prompt batch in tokens; batches never cross a KV page boundary [default: 256]' -r
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -l kv-type -d 'KV cache element type [default: f16]' -r -f -a "f16\t''
q8_0\t''
q4_0\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -l flash-attn -d 'Flash attention [default: auto]' -r -f -a "on\t''
off\t''
auto\t''"
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand bench" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand completions" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand completions" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand completions" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand completions" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -l dir -d 'Write kvrun.1 and one page per subcommand into this folder instead of printing' -r -F
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -s v -l verbose -d 'Show more diagnostics on stderr (-v: info and llama.cpp\'s log, -vv: debug). KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug)'
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -s q -l quiet -d 'Hide progress bars and notes; errors still print'
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -s h -l help -d 'Print help'
complete -c kvrun -n "__fish_kvrun_using_subcommand man" -s V -l version -d 'Print version'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run pull models bench completions man help" -f -a "chat" -d 'Chat interactively with a model (line mode; streams tokens as they come)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run pull models bench completions man help" -f -a "run" -d 'Run one prompt and print only the generated text (for scripts and agents)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run pull models bench completions man help" -f -a "pull" -d 'Download a model: the default model, a URL, or hf:OWNER/REPO/FILE.gguf'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run pull models bench completions man help" -f -a "models" -d 'List the models in kvrun\'s models folder'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run pull models bench completions man help" -f -a "bench" -d 'Measure prefill and decode speed on a model (prints a table)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run pull models bench completions man help" -f -a "completions" -d 'Print a shell completion script'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run pull models bench completions man help" -f -a "man" -d 'Print the man page (or write one page per subcommand with --dir)'
complete -c kvrun -n "__fish_kvrun_using_subcommand help; and not __fish_seen_subcommand_from chat run pull models bench completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
