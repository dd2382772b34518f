//! Diagnostics through `tracing`, on stderr. Silent by default (warnings from kvrun only);
//! `-v` adds kvrun's info and llama.cpp's own log, `-vv` debug. `KVRUN_LOG` takes a full
//! filter instead (for example `KVRUN_LOG=kvrun=debug,llama_cpp_2=info`).

use tracing_subscriber::EnvFilter;

pub fn init(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "kvrun=warn,llama_cpp_2=off",
        (false, 1) => "kvrun=info,llama_cpp_2=info",
        (false, _) => "kvrun=debug,llama_cpp_2=debug",
    };
    let filter = std::env::var("KVRUN_LOG")
        .ok()
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}
