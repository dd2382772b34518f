//! The device path, in a GPU build only (`--features vulkan`, `cuda` or `metal`): `.ci/vulkan`
//! runs these on Mesa's software Vulkan device, `.ci/cuda` on an NVIDIA GPU. The layers and
//! their KV live in device memory; a save reads the KV from there, a restore in a new
//! process writes it back, and the continuation equals an uninterrupted run on the same
//! device. Each test first checks that llama.cpp sees a device, so none can pass without
//! one.

use std::time::Duration;

use crate::common::inproc::{uninterrupted_on, THREADS};
use crate::common::server::Server;
use crate::common::tmux::Tmux;
use crate::common::*;
use kvrun::settings::{FlashAttn, KvType};
use kvrun::synth::{TinyLlamaSpec, TinyRecurrentArch};

/// Every layer: llama.cpp caps the count at the model's.
const ALL_LAYERS: u32 = 999;

/// The first device llama.cpp sees, as `kvrun stats --json` lists it.
fn the_device(home: &Home) -> serde_json::Value {
    let stats = run_json(home, &["stats"]);
    let gpus = stats["gpus"].as_array().expect("stats lists gpus");
    assert!(!gpus.is_empty(), "llama.cpp sees no device: {stats}");
    gpus[0].clone()
}

#[test]
fn the_device_is_named_with_its_memory_in_stats_and_metrics() {
    let home = Home::new();
    let device = the_device(&home);
    let name = device["name"].as_str().unwrap();
    let total = device["total_bytes"].as_u64().unwrap();
    assert!(!name.is_empty() && total > 0, "{device}");
    assert!(device["free_bytes"].as_u64().unwrap() <= total, "{device}");
    let text = stdout(&home.run(&["stats"]));
    assert!(text.contains(&format!("VRAM  {name}: ")), "{text}");

    let server = Server::start(&home, &tiny_model(), &[]);
    let metrics = server.get("/metrics", &[]).body;
    let total_line =
        format!("kvrun_device_bytes{{device=\"VRAM\",name=\"{name}\",kind=\"total\"}} {total}");
    assert!(metrics.contains(&total_line), "{metrics}");
    let stats = server.get("/v1/kvrun/stats", &[]).json();
    assert_eq!(stats["devices"]["gpus"][0]["name"], name, "{stats}");
    let status = server.terminate(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "{status}");
}

/// Each turn in a new process, all layers on the device: the second and third restore the
/// KV into device memory and go on exactly as one process that never stopped.
fn check_split_turns_on_the_device(model: &std::path::Path, raw: bool, turns: &[&str]) {
    let home = Home::new();
    the_device(&home);
    let settings = (KvType::F16, FlashAttn::Auto);
    let expected = uninterrupted_on(model, ALL_LAYERS, 4096, settings, raw, turns, 16);
    let layers = ALL_LAYERS.to_string();
    for (i, turn) in turns.iter().enumerate() {
        let mut args = greedy_turn_args(path_str(model), "split", raw, turn, "16");
        args.extend(["--gpu-layers", &layers, "-c", "4096"]);
        let v = run_json(&home, &args);
        if i > 0 {
            assert!(
                v["restored_tokens"].as_u64().unwrap() > 0,
                "turn {i} restored nothing: {v}"
            );
        }
        let want: Vec<i64> = expected[i].0.iter().map(|&t| t.into()).collect();
        assert_eq!(tokens(&v), want, "turn {i}");
        // `run --json` lists no log-probability for an end-of-generation token.
        let ours = logprobs(&v);
        let diff = max_diff(&ours, &expected[i].1[..ours.len()]);
        assert_eq!(diff, 0.0, "turn {i}: log-probabilities differ");
    }
}

#[test]
fn a_session_saved_from_device_memory_restores_into_it_exactly_tiny() {
    let doc = long_text(1);
    check_split_turns_on_the_device(&tiny_model(), true, &[&doc, " and then", " more"]);
}

/// A recurrent state (Mamba2) and a hybrid's (Granite 4 style) live on the device too: saved
/// whole from there and loaded back, they go on exactly.
#[test]
fn recurrent_and_hybrid_states_restore_into_device_memory_exactly() {
    let doc = long_text(1);
    for arch in [TinyRecurrentArch::Mamba2, TinyRecurrentArch::GraniteHybrid] {
        let home = Home::new();
        let model = home.path().join(format!("tiny-{arch:?}.gguf"));
        kvrun::synth::write_tiny_recurrent(&model, arch, 0x6b76_7275_6e00_0031).unwrap();
        check_split_turns_on_the_device(&model, true, &[&doc, " and then", " more"]);
    }
}

/// A context the device cannot hold is refused in one line naming the context, and the
/// session it was asked for keeps its log.
#[test]
fn a_context_larger_than_the_device_is_refused_in_one_line() {
    let home = Home::new();
    let device = the_device(&home);
    let total = device["total_bytes"].as_u64().unwrap();
    // 16 KiB of f16 KV per token: a context of this many cells needs twice the device.
    let per_token = 4 * 2 * 1024 * 2;
    let cells = (2 * total / per_token).next_power_of_two();
    let model = home.path().join("wide.gguf");
    let spec = TinyLlamaSpec {
        n_layer: 4,
        n_embd: 1024,
        n_head: 16,
        n_head_kv: 16,
        n_ff: 256,
        context_length: cells as u32,
        ..Default::default()
    };
    kvrun::synth::write_tiny_llama(&model, &spec).unwrap();
    let m = path_str(&model);
    let small = run_json(&home, &["run", m, "--session", "s", "-p", "hi", "-n", "2"]);
    assert_eq!(small["session"], "s", "{small}");
    let cells = cells.to_string();
    let out = home.run(&[
        "run",
        m,
        "--session",
        "s",
        "-p",
        " again",
        "-n",
        "2",
        "-c",
        &cells,
        "-t",
        THREADS,
    ]);
    assert_one_line_error(&out, 1, &cells);
    let log = manifest_json(&home, "s");
    assert!(
        log["tokens"].as_array().is_some_and(|t| !t.is_empty()),
        "{log}"
    );
}

/// The TUI's memory panel names the device, and the hot tier lives in its VRAM.
#[test]
fn the_chat_tui_shows_the_device_and_the_hot_tier_in_vram() {
    let home = Home::new();
    let device = the_device(&home);
    let name: String = device["name"].as_str().unwrap().chars().take(28).collect();
    let visible = std::env::var("GGML_VK_VISIBLE_DEVICES").unwrap_or_default();
    let command = format!(
        "env KVRUN_HOME={} GGML_VK_VISIBLE_DEVICES={visible} {} chat {} --session d -n 4 --temp 0; \
         echo EXITED-$?; sleep 60",
        path_str(home.path()),
        env!("CARGO_BIN_EXE_kvrun"),
        path_str(&tiny_model())
    );
    let tmux = Tmux::start("device", &command);
    let ready = tmux.wait_for("the memory panel", Duration::from_secs(120), |s| {
        s.contains("NVMe")
    });
    assert!(ready.contains(&name), "{ready}");
    assert!(ready.contains("in VRAM · "), "{ready}");
    assert!(!ready.contains("no GPU"), "{ready}");
    tmux.keys(&["hello", "Enter"]);
    tmux.wait_for("the save", Duration::from_secs(120), |s| {
        s.contains("saved 'd'")
    });
    tmux.keys(&["/quit", "Enter"]);
    let after = tmux.wait_for("kvrun to exit", Duration::from_secs(60), |s| {
        s.contains("EXITED-")
    });
    assert!(after.contains("EXITED-0"), "{after}");
}
