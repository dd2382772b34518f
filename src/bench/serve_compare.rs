//! `kvrun bench serve --llama-server PATH`: one agent conversation through `kvrun serve` and
//! through llama.cpp's `llama-server`, side by side: the cold first call, the next turn, the
//! first call after a restart (llama-server also with its slot saved before the stop and
//! restored by hand after the start), and another conversation sharing the system prompt.
//! Both prefill in 512-token micro-batches (kvrun's two-page batches, llama-server's
//! default `-ub`).

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde_json::{json, Value};

use super::harness::{Call, ChildServer};
use super::llama_server::LlamaServer;
use crate::env::Env;
use crate::models::ModelChoice;
use crate::settings::LlamaSettings;

/// What both servers are given.
pub(super) struct Setup<'a> {
    pub(super) binary: &'a Path,
    pub(super) choice: &'a ModelChoice,
    pub(super) llama: &'a LlamaSettings,
    pub(super) ctx: u32,
    pub(super) system: &'a str,
    pub(super) tools: &'a Value,
    pub(super) decode_tokens: u32,
    pub(super) repeat: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Row {
    Cold,
    Second,
    Restart,
    Restored,
    Other,
}

impl Row {
    const ALL: [Row; 5] = [
        Row::Cold,
        Row::Second,
        Row::Restart,
        Row::Restored,
        Row::Other,
    ];

    fn label(self) -> &'static str {
        match self {
            Row::Cold => "first call, cold",
            Row::Second => "second turn",
            Row::Restart => "after a restart",
            Row::Restored => "after a restart, slot restored by hand",
            Row::Other => "another conversation, same system prompt",
        }
    }
}

/// Each server's calls per row, over the repeats.
#[derive(Default)]
struct Measured {
    kvrun: Vec<(Row, Call)>,
    llama: Vec<(Row, Call)>,
    saves: Vec<Duration>,
    restores: Vec<Duration>,
}

pub(super) fn run(env: &Env, work: &Path, setup: &Setup<'_>) -> Result<()> {
    // llama-server leaves out the tools of a template that renders none (SmolLM2's), where
    // kvrun describes them in the system message: written into the system text here, both
    // servers render the same messages with the model's own template.
    let system = format!(
        "{}\nTools, as JSON schemas:\n{}\n",
        setup.system, setup.tools
    );
    let setup = &Setup {
        system: &system,
        tools: &Value::Null,
        ..*setup
    };
    let mut measured = Measured::default();
    for r in 0..setup.repeat {
        env.ui.note(format!(
            "run {} of {}: kvrun serve ...",
            r + 1,
            setup.repeat
        ));
        kvrun_side(&work.join(format!("kvrun-{r}")), setup, &mut measured)?;
        env.ui.note(format!(
            "run {} of {}: llama-server ...",
            r + 1,
            setup.repeat
        ));
        llama_side(&work.join(format!("llama-{r}")), setup, &mut measured)?;
    }
    print_table(&measured, setup);
    Ok(())
}

fn kvrun_side(home: &Path, s: &Setup<'_>, m: &mut Measured) -> Result<()> {
    let (tools, n) = (s.tools, s.decode_tokens);
    let server = ChildServer::start(home, s.choice, s.llama, s.ctx, 1)?;
    m.kvrun
        .push((Row::Cold, server.stream(&turn(s.system, 0), tools, n)?));
    m.kvrun
        .push((Row::Second, server.stream(&turn(s.system, 1), tools, n)?));
    server.stop()?;
    let server = ChildServer::start(home, s.choice, s.llama, s.ctx, 1)?;
    m.kvrun
        .push((Row::Restart, server.stream(&turn(s.system, 2), tools, n)?));
    m.kvrun
        .push((Row::Other, server.stream(&other(s.system), tools, n)?));
    server.stop()
}

fn llama_side(dir: &Path, s: &Setup<'_>, m: &mut Measured) -> Result<()> {
    let (tools, n) = (s.tools, s.decode_tokens);
    let slots = dir.join("slots");
    std::fs::create_dir_all(&slots)?;
    let start = |name: &str, extra: &[&str]| {
        LlamaServer::start(
            s.binary,
            &s.choice.path,
            s.llama.threads,
            s.ctx,
            &slots,
            &dir.join(format!("{name}.log")),
            extra,
        )
    };
    let server = start("first", &[])?;
    m.llama
        .push((Row::Cold, server.stream(&turn(s.system, 0), tools, n)?));
    m.llama
        .push((Row::Second, server.stream(&turn(s.system, 1), tools, n)?));
    m.saves.push(server.slot("save", "bench.bin")?);
    server.stop()?;
    let server = start("restart", &[])?;
    m.llama
        .push((Row::Restart, server.stream(&turn(s.system, 2), tools, n)?));
    server.stop()?;
    let server = start("restored", &[])?;
    m.restores.push(server.slot("restore", "bench.bin")?);
    m.llama
        .push((Row::Restored, server.stream(&turn(s.system, 2), tools, n)?));
    m.llama
        .push((Row::Other, server.stream(&other(s.system), tools, n)?));
    server.stop()
}

/// The conversation after `turns` earlier exchanges, as `bench serve` sends it.
fn turn(system: &str, turns: usize) -> Value {
    super::agent_prompt::agent_messages(system, turns)
}

/// A new conversation: the same system prompt, a different first user turn.
fn other(system: &str) -> Value {
    json!([
        {"role": "system", "content": system},
        {"role": "user", "content": "Another task: explain how the tests are organised."},
    ])
}

fn print_table(m: &Measured, s: &Setup<'_>) {
    let prompt = |calls: &[(Row, Call)]| {
        calls
            .iter()
            .find(|(row, _)| *row == Row::Cold)
            .map_or(0, |(_, c)| c.prompt_tokens)
    };
    println!(
        "kvrun serve and llama-server, an agent prompt of {} tokens (llama-server: {}); {} \
         threads, -c {}, one slot, greedy, {} generated; medians of {}",
        prompt(&m.kvrun),
        prompt(&m.llama),
        s.llama.threads,
        s.ctx,
        s.decode_tokens,
        s.repeat
    );
    println!(
        "{:<46} {:>10} {:>12} {:>8} {:>8}",
        "call", "kvrun TTFT", "llama TTFT", "kvrun", "llama"
    );
    println!(
        "{:<46} {:>10} {:>12} {:>8} {:>8}",
        "", "s", "s", "cached", "cached"
    );
    for row in Row::ALL {
        // kvrun needs no hand restore: the restart row already is its restored call.
        let kvrun = if row == Row::Restored {
            median(&m.kvrun, Row::Restart)
        } else {
            median(&m.kvrun, row)
        };
        let llama = median(&m.llama, row);
        println!(
            "{:<46} {:>10} {:>12} {:>8} {:>8}",
            row.label(),
            seconds(kvrun.map(|c| c.0)),
            seconds(llama.map(|c| c.0)),
            count(kvrun.map(|c| c.1)),
            count(llama.map(|c| c.1)),
        );
    }
    println!(
        "llama-server slot save {} ms, restore {} ms (median; not in its TTFT above); \
         kvrun's restored row is its restart row",
        millis(&m.saves),
        millis(&m.restores)
    );
}

/// The median TTFT of `row`'s calls, with the cached tokens of that call.
fn median(calls: &[(Row, Call)], row: Row) -> Option<(Duration, u64)> {
    let mut of_row: Vec<_> = calls
        .iter()
        .filter(|(r, _)| *r == row)
        .map(|(_, c)| (c.ttft, c.cached_tokens))
        .collect();
    of_row.sort();
    of_row.get(of_row.len() / 2).copied()
}

fn seconds(d: Option<Duration>) -> String {
    d.map_or_else(|| "–".into(), |d| format!("{:.2}", d.as_secs_f64()))
}

fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "–".into(), |n| n.to_string())
}

fn millis(ds: &[Duration]) -> String {
    let mut ds = ds.to_vec();
    ds.sort();
    ds.get(ds.len() / 2)
        .map_or_else(|| "–".into(), |d| format!("{:.0}", d.as_secs_f64() * 1e3))
}
