//! `kvrun bench grammar`: the tool-call constraint on real agents' tool lists (the recorded
//! requests in tests/agents), llama.cpp's GBNF sampler (from kvrun's converter) next to
//! llguidance (the schemas whole, in a Lark grammar). For each model and agent: the time to
//! build the constraint, or why it was refused, and the time to sample one token under it
//! during a forced call (mask, draw, accept), against unconstrained sampling.

use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use serde_json::Value;

use super::harness::median;
use crate::cli::BenchGrammarArgs;
use crate::env::{load_model, Env};
use crate::llama::{Context, Grammar, Model, Sampler};
use crate::server::responses::flat_name;
use crate::settings::{LlamaSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};
use crate::tools::{tool_call_grammar, tool_call_lark, ToolFormat};

/// The recorded requests whose tools are measured: (client, file in the agents folder).
const AGENTS: [(&str, &str); 3] = [
    ("Claude Code", "claude-code-messages.json"),
    ("Codex", "codex-responses.json"),
    ("opencode", "opencode-main.json"),
];

/// What the model is asked before the forced call.
const PROMPT: &str = "Read the file hello.txt, then list the Python files in the project.\n";

/// The constraints measured: kvrun's GBNF converter with llama.cpp's grammar sampler, and
/// the Lark grammar with llguidance (what kvrun uses), each forced and lazy. A lazy one
/// waits for the call's opening, which an unconstrained model need not write, so it is
/// built but not sampled.
#[derive(Clone, Copy, PartialEq)]
enum Engine {
    Gbnf { lazy: bool },
    Llguidance { lazy: bool },
}

impl Engine {
    const ALL: [Engine; 4] = [
        Engine::Gbnf { lazy: false },
        Engine::Gbnf { lazy: true },
        Engine::Llguidance { lazy: false },
        Engine::Llguidance { lazy: true },
    ];

    fn name(self) -> &'static str {
        match self {
            Engine::Gbnf { lazy: false } => "GBNF forced",
            Engine::Gbnf { lazy: true } => "GBNF lazy",
            Engine::Llguidance { lazy: false } => "llguidance forced",
            Engine::Llguidance { lazy: true } => "llguidance lazy",
        }
    }

    /// Converts the schemas and constrains `sampler`.
    fn build(
        self,
        model: &Model,
        format: ToolFormat,
        tools: &[&Value],
        sampler: &mut Sampler,
    ) -> Result<bool> {
        let (grammar, lazy) = match self {
            Engine::Gbnf { lazy } => (Grammar::Gbnf(tool_call_grammar(format, tools)?), lazy),
            Engine::Llguidance { lazy } => (Grammar::Lark(tool_call_lark(format, tools)?), lazy),
        };
        match format.call_opening().filter(|_| lazy) {
            Some(opening) => sampler.constrain_after(model, &grammar, opening)?,
            None => sampler.constrain(model, &grammar)?,
        }
        Ok(lazy)
    }
}

struct Row {
    model: String,
    agent: &'static str,
    tools: usize,
    schema_kib: f64,
    engine: &'static str,
    /// Median build time in ms, or why the constraint was refused.
    build: Result<f64, String>,
    sampled: Option<Sampled>,
}

/// Sampling under one constraint: per-token times in µs, and the text generated.
struct Sampled {
    median_us: f64,
    max_us: f64,
    tokens: usize,
    text: String,
}

pub fn run(env: &Env, args: BenchGrammarArgs) -> Result<ExitCode> {
    let mut llama = LlamaSettings::resolve(&args.llama, &env.config);
    llama.ctx_size = 256 + args.tokens;
    let agents = AGENTS
        .iter()
        .map(|&(agent, file)| Ok((agent, agent_tools(&args.agents.join(file))?)))
        .collect::<Result<Vec<_>>>()?;
    let mut rows = Vec::new();
    let mut setups = Vec::new();
    for spec in &args.models {
        let choice = crate::models::choose(
            Some(spec),
            &env.config,
            &env.paths,
            crate::models::Purpose::Serve,
        );
        let (model, _) = load_model(&choice, llama.gpu_layers)?;
        let name = model.facts().description.clone();
        let format = model.tool_format(true);
        env.ui
            .note(format!("{name}: {format:?} tool calls; measuring..."));
        let started = Instant::now();
        model.guidance()?;
        setups.push((
            name.clone(),
            model.facts().n_vocab,
            started.elapsed().as_secs_f64() * 1e3,
        ));
        rows.push(Row {
            model: name.clone(),
            agent: "–",
            tools: 0,
            schema_kib: 0.0,
            engine: "unconstrained",
            build: Ok(0.0),
            sampled: Some(sample(
                &model,
                &llama,
                args.tokens,
                &mut Sampler::new(&model, &SamplingSettings::greedy(), &[]),
            )?),
        });
        for (agent, tools) in &agents {
            let refs: Vec<&Value> = tools.iter().collect();
            let schema_kib = serde_json::to_string(tools)?.len() as f64 / 1024.0;
            for engine in Engine::ALL {
                let mut times = Vec::new();
                let mut built = Err(String::new());
                for _ in 0..args.repeat.max(1) {
                    let mut sampler = Sampler::new(&model, &SamplingSettings::greedy(), &[]);
                    let started = Instant::now();
                    built = engine
                        .build(&model, format, &refs, &mut sampler)
                        .map(|lazy| (sampler, lazy))
                        .map_err(|e| format!("{e:#}"));
                    times.push(started.elapsed().as_secs_f64() * 1e3);
                    if built.is_err() {
                        break;
                    }
                }
                let sampled = match &mut built {
                    Ok((sampler, false)) => Some(sample(&model, &llama, args.tokens, sampler)?),
                    _ => None,
                };
                tracing::debug!(
                    "{name} {agent} {}: {:?}",
                    engine.name(),
                    sampled.as_ref().map(|s| &s.text)
                );
                rows.push(Row {
                    model: name.clone(),
                    agent,
                    tools: tools.len(),
                    schema_kib,
                    engine: engine.name(),
                    build: built.map(|_| median(&times)),
                    sampled,
                });
            }
        }
    }
    for (model, n_vocab, ms) in setups {
        println!("{model}: llguidance's token trie and parser factory ({n_vocab} tokens, once per model) {ms:.0} ms");
    }
    println!();
    println!("| model | agent | tools | schemas KiB | constraint | build ms | sample µs/token (median) | max µs | tokens |");
    println!("|---|---|---:|---:|---|---:|---:|---:|---:|");
    for r in rows {
        let build = match &r.build {
            Ok(_) if r.tools == 0 => "–".to_string(),
            Ok(ms) => format!("{ms:.2}"),
            Err(e) => format!("refused: {}", e.chars().take(80).collect::<String>()),
        };
        let (median_us, max_us, tokens) = match &r.sampled {
            Some(s) => (
                format!("{:.0}", s.median_us),
                format!("{:.0}", s.max_us),
                s.tokens.to_string(),
            ),
            None => ("–".into(), "–".into(), "–".into()),
        };
        let tools = if r.tools == 0 {
            "–".into()
        } else {
            r.tools.to_string()
        };
        let kib = if r.tools == 0 {
            "–".into()
        } else {
            format!("{:.1}", r.schema_kib)
        };
        println!(
            "| {} | {} | {tools} | {kib} | {} | {build} | {median_us} | {max_us} | {tokens} |",
            r.model, r.agent, r.engine
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Generates up to `tokens` greedy tokens after [`PROMPT`] with `sampler`, timing each
/// draw (the constraint's mask and accept included); stops at the end of generation.
fn sample(
    model: &Model,
    llama: &LlamaSettings,
    tokens: u32,
    sampler: &mut Sampler,
) -> Result<Sampled> {
    let mut ctx = Context::new(model, llama, DEFAULT_PAGE_TOKENS, 1)?;
    let prompt = model.tokenize_prompt(PROMPT);
    let mut pos = ctx.decode(0, &prompt, 0, true, |_| ControlFlow::Continue(()))?;
    let mut times = Vec::new();
    let mut generated = Vec::new();
    for _ in 0..tokens {
        let started = Instant::now();
        let token = ctx.sample(sampler).context("no logits to sample")?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
        if model.is_end_of_generation(token) {
            break;
        }
        generated.push(token);
        pos = ctx.decode(0, &[token], pos, true, |_| ControlFlow::Continue(()))?;
    }
    Ok(Sampled {
        median_us: median(&times),
        max_us: times.iter().copied().fold(0.0, f64::max),
        tokens: times.len(),
        text: model.tokens_text(&generated),
    })
}

/// The function tools of a recorded request, in OpenAI's chat shape as kvrun's server sees
/// them: chat tools as they are, Anthropic's `input_schema` and the Responses API's flat
/// tools as `parameters`, a Responses namespace's tools as `<namespace>__<name>`; other
/// tools (web search) are dropped.
fn agent_tools(path: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {} (give --agents)", path.display()))?;
    let request: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let mut tools = Vec::new();
    for tool in request["body"]["tools"].as_array().into_iter().flatten() {
        if tool["type"] == "namespace" {
            let namespace = tool["name"].as_str().unwrap_or_default();
            for inner in tool["tools"].as_array().into_iter().flatten() {
                tools.extend(function(inner, Some(namespace)));
            }
        } else {
            tools.extend(function(tool, None));
        }
    }
    if tools.is_empty() {
        bail!("{} has no function tools", path.display());
    }
    Ok(tools)
}

fn function(tool: &Value, namespace: Option<&str>) -> Option<Value> {
    if tool.get("function").is_some() {
        return Some(tool.clone());
    }
    let name = tool["name"].as_str()?;
    let parameters = tool
        .get("parameters")
        .or_else(|| tool.get("input_schema"))?;
    let name = match namespace {
        Some(namespace) => flat_name(namespace, name),
        None => name.to_string(),
    };
    Some(
        serde_json::json!({"type": "function", "function": {"name": name, "parameters": parameters}}),
    )
}
