
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
            [CompletionResult]::new('pull', 'pull', [CompletionResultType]::ParameterValue, 'Download a model: the default model, a URL, or hf:OWNER/REPO/FILE.gguf')
            [CompletionResult]::new('models', 'models', [CompletionResultType]::ParameterValue, 'List the models in kvrun''s models folder')
            [CompletionResult]::new('bench', 'bench', [CompletionResultType]::ParameterValue, 'Measure prefill and decode speed on a model (prints a table)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the man page (or write one page per subcommand with --dir)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'kvrun;chat' {
            [CompletionResult]::new('--system', '--system', [CompletionResultType]::ParameterName, 'A system prompt for the conversation')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Largest reply in tokens [default: until the model stops or the context is full]')
            [CompletionResult]::new('--max-tokens', '--max-tokens', [CompletionResultType]::ParameterName, 'Largest reply in tokens [default: until the model stops or the context is full]')
            [CompletionResult]::new('--context-overflow', '--context-overflow', [CompletionResultType]::ParameterName, 'What to do when the conversation outgrows the context: drop the oldest turns, or stop with an error [default: truncate]')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens [default: 8192, capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens [default: 8192, capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens; batches never cross a KV page boundary [default: 256]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens; batches never cross a KV page boundary [default: 256]')
            [CompletionResult]::new('--kv-type', '--kv-type', [CompletionResultType]::ParameterName, 'KV cache element type [default: f16]')
            [CompletionResult]::new('--flash-attn', '--flash-attn', [CompletionResultType]::ParameterName, 'Flash attention [default: auto]')
            [CompletionResult]::new('--temp', '--temp', [CompletionResultType]::ParameterName, 'Temperature; 0 is greedy [default: 0.8]')
            [CompletionResult]::new('--top-k', '--top-k', [CompletionResultType]::ParameterName, 'Keep only the K most likely tokens; 0 disables [default: 40]')
            [CompletionResult]::new('--top-p', '--top-p', [CompletionResultType]::ParameterName, 'Nucleus sampling threshold; 1.0 disables [default: 0.95]')
            [CompletionResult]::new('--min-p', '--min-p', [CompletionResultType]::ParameterName, 'Minimum probability relative to the top token; 0 disables [default: 0.05]')
            [CompletionResult]::new('--repeat-penalty', '--repeat-penalty', [CompletionResultType]::ParameterName, 'Penalty for repeating recent tokens; 1.0 disables [default: 1.0]')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Random seed [default: a fresh one per run]')
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
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'The prompt text (otherwise --prompt-file, otherwise stdin)')
            [CompletionResult]::new('--prompt', '--prompt', [CompletionResultType]::ParameterName, 'The prompt text (otherwise --prompt-file, otherwise stdin)')
            [CompletionResult]::new('--prompt-file', '--prompt-file', [CompletionResultType]::ParameterName, 'Read the prompt from a file')
            [CompletionResult]::new('--system', '--system', [CompletionResultType]::ParameterName, 'A system prompt (chat mode only)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Largest number of tokens to generate; 0 only prefills [default: 256]')
            [CompletionResult]::new('--max-tokens', '--max-tokens', [CompletionResultType]::ParameterName, 'Largest number of tokens to generate; 0 only prefills [default: 256]')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens [default: 8192, capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens [default: 8192, capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens; batches never cross a KV page boundary [default: 256]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens; batches never cross a KV page boundary [default: 256]')
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
        'kvrun;bench' {
            [CompletionResult]::new('--prompt-tokens', '--prompt-tokens', [CompletionResultType]::ParameterName, 'Prompt lengths to measure, in tokens')
            [CompletionResult]::new('--decode-tokens', '--decode-tokens', [CompletionResultType]::ParameterName, 'Tokens to generate for the decode figure')
            [CompletionResult]::new('--repeat', '--repeat', [CompletionResultType]::ParameterName, 'Repetitions per row; the table shows the median')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Context size in tokens [default: 8192, capped at the model''s training context]')
            [CompletionResult]::new('--ctx-size', '--ctx-size', [CompletionResultType]::ParameterName, 'Context size in tokens [default: 8192, capped at the model''s training context]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--threads', '--threads', [CompletionResultType]::ParameterName, 'CPU threads [default: the number of cores]')
            [CompletionResult]::new('--gpu-layers', '--gpu-layers', [CompletionResultType]::ParameterName, 'Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU backend, else 0]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens; batches never cross a KV page boundary [default: 256]')
            [CompletionResult]::new('--batch-size', '--batch-size', [CompletionResultType]::ParameterName, 'Largest prompt batch in tokens; batches never cross a KV page boundary [default: 256]')
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
            [CompletionResult]::new('pull', 'pull', [CompletionResultType]::ParameterValue, 'Download a model: the default model, a URL, or hf:OWNER/REPO/FILE.gguf')
            [CompletionResult]::new('models', 'models', [CompletionResultType]::ParameterValue, 'List the models in kvrun''s models folder')
            [CompletionResult]::new('bench', 'bench', [CompletionResultType]::ParameterValue, 'Measure prefill and decode speed on a model (prints a table)')
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
        'kvrun;help;pull' {
            break
        }
        'kvrun;help;models' {
            break
        }
        'kvrun;help;bench' {
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
