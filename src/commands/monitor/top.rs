//! `kvrun top URL`: the TUI's memory panel and sessions list, live, for a running
//! `kvrun serve`. It polls `/v1/kvrun/stats` and feeds the same events a chat thread
//! would; the conversation pane is read-only (clients talk to the server over HTTP).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::chat::protocol::ModelRow;
use crate::chat::protocol::{
    ChatEvent, MemorySnapshot, SessionRow, ShownMessage, Tier, TierUsage, UserCommand,
};
use crate::cli::TopArgs;
use crate::commands::monitor::remote::{fetch_stats, RemoteStats};
use crate::env::Env;
use crate::service::fleet::ModelState;
use crate::service::handle::TierBytes;
use crate::session::SessionSummary;
use crate::tiers::{Devices, SystemMemory};

/// How often the server is asked (the panel's own refresh rate is about this).
const POLL: Duration = Duration::from_millis(500);

pub fn run(env: &Env, args: TopArgs) -> Result<ExitCode> {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        bail!("kvrun top needs a terminal; `kvrun stats --connect URL` prints the same figures");
    }
    let key = args.api_key.clone();
    // Fail fast, before the screen is taken, when the server cannot be reached.
    let first = fetch_stats(&args.url, key.as_deref())?;
    let (events_tx, events) = std::sync::mpsc::channel();
    let (commands, from_tui) = std::sync::mpsc::channel::<UserCommand>();
    let stop = Arc::new(AtomicBool::new(false));
    let data = env.paths.data.clone();
    let poller = {
        let (stop, url, tx) = (stop.clone(), args.url.clone(), events_tx.clone());
        std::thread::spawn(move || poll(&url, key.as_deref(), first, &data, &tx, &stop))
    };
    let answerer = {
        let (url, key) = (args.url.clone(), args.api_key.clone());
        std::thread::spawn(move || {
            for command in from_tui {
                let event = match command {
                    UserCommand::Quit => break,
                    // Enter on a session: its conversation, as the server saved it.
                    UserCommand::Switch(name) => match conversation(&url, key.as_deref(), &name) {
                        Ok((history, tokens)) => {
                            let _ = events_tx.send(ChatEvent::Switched {
                                session: name,
                                history,
                            });
                            // The header's context use is the selected session's.
                            let n_ctx = fetch_stats(&url, key.as_deref())
                                .ok()
                                .and_then(|s| s.info)
                                .map(|i| u32::try_from(i.n_ctx).unwrap_or(u32::MAX));
                            match (tokens, n_ctx) {
                                (Some(used), Some(n_ctx)) => ChatEvent::Context { used, n_ctx },
                                _ => continue,
                            }
                        }
                        Err(e) => ChatEvent::Error(format!("{e:#}")),
                    },
                    UserCommand::ListSessions | UserCommand::Stop => continue,
                    _ => ChatEvent::Info(
                        "kvrun top only watches the server; talk to it over HTTP".into(),
                    ),
                };
                let _ = events_tx.send(event);
            }
            let _ = events_tx.send(ChatEvent::Exited);
        })
    };
    let title = format!("kvrun top {}", args.url);
    let result = crate::tui::run_terminal(
        crate::tui::TuiOptions {
            title,
            session: None,
            read_only: true,
        },
        &events,
        commands,
    );
    stop.store(true, Ordering::SeqCst);
    let _ = poller.join();
    let _ = answerer.join();
    result.map(|_| ExitCode::SUCCESS)
}

fn poll(
    url: &str,
    key: Option<&str>,
    first: RemoteStats,
    data: &std::path::Path,
    events: &Sender<ChatEvent>,
    stop: &AtomicBool,
) {
    let mut latest = Ok(first);
    let mut announced = false;
    while !stop.load(Ordering::SeqCst) {
        match latest {
            Ok(remote) => {
                if let (false, Some(info)) = (announced, &remote.info) {
                    announced = true;
                    let _ = events.send(ChatEvent::Ready {
                        model: info.model_name.clone(),
                        n_ctx: u32::try_from(info.n_ctx).unwrap_or(u32::MAX),
                        gpu: false,
                    });
                }
                // The server's own figures; this machine's for a server too old to send them.
                let devices = remote.devices.clone().unwrap_or_else(|| Devices {
                    gpus: Vec::new(),
                    system: SystemMemory::read(data),
                });
                let (memory, sessions) = snapshot(&remote, &devices);
                let _ = events.send(ChatEvent::Memory(Box::new(memory)));
                let _ = events.send(ChatEvent::Sessions(sessions));
            }
            Err(e) => {
                let _ = events.send(ChatEvent::Error(format!("{e:#}")));
            }
        }
        std::thread::sleep(POLL);
        latest = fetch_stats(url, key);
    }
}

/// A session's conversation from the server (`/v1/kvrun/sessions/{name}`): its messages,
/// or, for a session that records only its token log (the HTTP APIs' clients keep their
/// messages), the log's turns as the model reads them; and its tokens.
fn conversation(
    url: &str,
    key: Option<&str>,
    name: &str,
) -> Result<(Vec<ShownMessage>, Option<usize>)> {
    // Session names are [A-Za-z0-9._-]: a path segment as they are.
    let path = format!("/v1/kvrun/sessions/{name}");
    let session: serde_json::Value = crate::commands::monitor::remote::get_json(url, &path, key)?;
    let tokens = session["tokens"].as_u64().map(|n| n as usize);
    Ok((shown_messages(&session), tokens))
}

fn shown_messages(session: &serde_json::Value) -> Vec<ShownMessage> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let messages: Vec<ShownMessage> = session["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| ShownMessage {
            role: text(&m["role"]),
            content: text(&m["content"]),
        })
        .collect();
    if !messages.is_empty() {
        return messages;
    }
    match session["text"].as_str() {
        Some(log) => log_turns(log).unwrap_or_else(|| {
            vec![ShownMessage {
                role: "log".into(),
                content: log.to_string(),
            }]
        }),
        None => Vec::new(),
    }
}

/// The turns of a rendered log in the common chat markups (ChatML's `<|im_start|>ROLE`
/// … `<|im_end|>`, Gemma's `<start_of_turn>ROLE` … `<end_of_turn>`); `None` for others.
fn log_turns(log: &str) -> Option<Vec<ShownMessage>> {
    let (open, close) = [
        ("<|im_start|>", "<|im_end|>"),
        ("<start_of_turn>", "<end_of_turn>"),
    ]
    .into_iter()
    .find(|(open, _)| log.contains(open))?;
    let turns = log
        .split(open)
        .skip(1)
        .filter_map(|turn| {
            let (role, rest) = turn.split_once('\n').unwrap_or((turn, ""));
            let content = rest.split(close).next().unwrap_or(rest).trim();
            let role = match role.trim() {
                "model" => "assistant",
                other => other,
            };
            (!role.is_empty() && !content.is_empty()).then(|| ShownMessage {
                role: role.to_string(),
                content: content.to_string(),
            })
        })
        .collect::<Vec<_>>();
    (!turns.is_empty()).then_some(turns)
}

/// The server's figures as the memory panel and the sessions list show them.
fn snapshot(remote: &RemoteStats, devices: &Devices) -> (MemorySnapshot, Vec<SessionRow>) {
    let system = &devices.system;
    let s = &remote.stats;
    let in_tier = |tier: &str| -> Vec<String> {
        s.sessions
            .iter()
            .filter(|x| x.tier == tier)
            .map(|x| x.name.clone())
            .collect()
    };
    let usage = |t: &TierBytes, tier: &str, hits: u64| TierUsage {
        used_bytes: t.used,
        budget_bytes: t.budget,
        pages: 0,
        sessions: in_tier(tier),
        hit_tokens: hits,
    };
    let memory = MemorySnapshot {
        gpus: devices.gpus.clone(),
        hot: usage(&s.hot, "hot", s.restored_hot_tokens),
        hot_cells: s.hot_cells,
        hot_cells_used: s.hot_cells_used,
        hot_cells_ceiling: s.ctx_ceiling.max(s.hot_cells),
        warm: usage(&s.warm, "warm", s.restored_warm_tokens),
        cold: usage(&s.cold, "cold", s.restored_cold_tokens),
        prefill_tokens: s.prefilled_tokens,
        process_rss_bytes: system.process_rss,
        ram_total_bytes: system.ram_total,
        ram_available_bytes: system.ram_available,
        disk_total_bytes: system.disk_total,
        disk_free_bytes: system.disk_free,
        last_move: Some(format!(
            "{} decoding, {} waiting; {} requests, {} tokens generated",
            s.active, s.queued, s.requests, s.generated_tokens
        )),
        models: remote
            .models
            .iter()
            .flat_map(|f| &f.models)
            .map(|m| {
                let loaded = m.state == ModelState::Loaded;
                ModelRow {
                    id: m.id.clone(),
                    state: m.state.as_str().to_string(),
                    bytes: if loaded { m.charge.total() } else { 0 },
                    idle_secs: (loaded && m.in_use == 0 && m.idle_since_unix > 0)
                        .then(|| crate::clock::unix_now().saturating_sub(m.idle_since_unix)),
                }
            })
            .collect(),
        model_budget_bytes: remote.models.as_ref().map_or(0, |f| f.budget),
    };
    let sessions = s
        .sessions
        .iter()
        .map(|x| {
            let summary = SessionSummary {
                name: x.name.clone(),
                tokens: x.tokens,
                ..SessionSummary::default()
            };
            SessionRow {
                last_used_unix: x.last_used_unix,
                active: x.tier == "hot",
                served: true,
                named: x.named,
                pinned: x.pinned,
                ..SessionRow::new(summary, Tier::from_engine(&x.tier))
            }
        })
        .collect();
    (memory, sessions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_stats_become_the_panels_figures() {
        let remote: RemoteStats = serde_json::from_value(serde_json::json!({
            "info": {"model_name": "m", "n_ctx": 4096, "parallel": 2},
            "stats": {
                "requests": 3, "prompt_tokens": 900, "prefilled_tokens": 400,
                "restored_hot_tokens": 0, "restored_warm_tokens": 256,
                "restored_cold_tokens": 244, "generated_tokens": 30, "queued": 1, "active": 2,
                "hot_cells_used": 700, "hot_cells": 4096,
                "hot": {"used": 10, "budget": null}, "warm": {"used": 20, "budget": 100},
                "cold": {"used": 30, "budget": null},
                "sessions": [
                    {"name": "a", "tokens": 5, "tier": "hot", "pinned": false, "last_used_unix": 1},
                    {"name": "b", "tokens": 6, "tier": "cold", "pinned": true, "last_used_unix": 2}
                ]
            },
            "devices": {"gpus": [], "ram_total": 64, "ram_available": 32, "process_rss": 7,
                        "disk_total": 100, "disk_free": 50},
            "models": {"budget": 1000, "used": 600, "models": [
                {"id": "big", "state": "loaded", "in_use": 0, "idle_since_unix": 1,
                 "charge": {"weights": 500, "kv": 60, "compute": 40}},
                {"id": "small", "state": "unloaded", "charge": {"weights": 90}}
            ]}
        }))
        .unwrap();
        let devices = remote.devices.clone().unwrap();
        let (memory, rows) = snapshot(&remote, &devices);
        // The server's own resident memory, not this process's (nor 0).
        assert_eq!(memory.process_rss_bytes, 7);
        assert_eq!(memory.ram_total_bytes, 64);
        assert_eq!(memory.hot_cells_used, 700);
        assert_eq!(memory.warm.budget_bytes, Some(100));
        assert_eq!(memory.warm.hit_tokens, 256);
        assert_eq!(memory.cold.sessions, ["b"]);
        assert_eq!(memory.prefill_tokens, 400);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].tier, rows[0].active), (Tier::Hot, true));
        assert_eq!(rows[1].tier, Tier::Cold);
        assert_eq!(memory.model_budget_bytes, 1000);
        let models: Vec<_> = memory
            .models
            .iter()
            .map(|m| {
                (
                    m.id.as_str(),
                    m.state.as_str(),
                    m.bytes,
                    m.idle_secs.is_some(),
                )
            })
            .collect();
        assert_eq!(
            models,
            [
                ("big", "loaded", 600, true),
                ("small", "unloaded", 0, false)
            ]
        );
    }

    #[test]
    fn a_session_shows_its_messages_or_else_its_log() {
        let chat = serde_json::json!({"messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]});
        let shown = shown_messages(&chat);
        assert_eq!(
            (shown[1].role.as_str(), shown[1].content.as_str()),
            ("assistant", "hello")
        );
        // A served conversation's log, in its turns.
        let chatml = "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n\
                      <|im_start|>assistant\nhello<|im_end|>\n";
        let shown = shown_messages(&serde_json::json!({"messages": [], "text": chatml}));
        let turns: Vec<(&str, &str)> = shown
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        assert_eq!(
            turns,
            [
                ("system", "be brief"),
                ("user", "hi"),
                ("assistant", "hello")
            ]
        );
        let gemma = "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\nyo";
        let shown = shown_messages(&serde_json::json!({"messages": [], "text": gemma}));
        assert_eq!(shown[1].role, "assistant");
        assert_eq!(shown[1].content, "yo");
        // Other markup: the log as it is.
        let raw = serde_json::json!({"messages": [], "text": "### User: hi"});
        let shown = shown_messages(&raw);
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].content, "### User: hi");
    }
}
