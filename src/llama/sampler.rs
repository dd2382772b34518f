//! Token sampling (llama.cpp's sampler chain) and log-probabilities.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::guidance::Pending;
use super::{LlamaError, TokenId};
use crate::settings::SamplingSettings;

/// A grammar a reply must match, in the language of the engine that enforces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grammar {
    /// llama.cpp's GBNF, root rule `root` (JSON schemas: `response_format`,
    /// `--json-schema`).
    Gbnf(String),
    /// llguidance's Lark, JSON schemas embedded whole with `%json` (tool calls). A lazy
    /// one starts with `start: call`, the call from its opening on.
    Lark(String),
}

impl Grammar {
    pub fn text(&self) -> &str {
        match self {
            Self::Gbnf(text) | Self::Lark(text) => text,
        }
    }
}

/// How many recent tokens the repeat penalty looks at (llama.cpp's default).
const PENALTY_LAST_N: i32 = 64;

pub struct Sampler {
    chain: LlamaSampler,
    /// Constrains the output (a tool call, a JSON schema). Kept out of the chain so that
    /// the prompt history the repeat penalty needs never advances the grammar.
    grammar: Option<(LlamaSampler, LlamaToken)>,
    /// A lazy Lark grammar until the reply opens a call.
    pending: Option<Pending>,
}

impl Sampler {
    /// Builds the chain: repeat, frequency and presence penalties, top-k, top-p, min-p, temperature, then a seeded
    /// draw; or plain argmax when `temp` is 0, which is fully deterministic.
    pub fn new(model: &super::Model, settings: &SamplingSettings, history: &[TokenId]) -> Self {
        let mut stages = Vec::new();
        if (settings.repeat_penalty - 1.0).abs() > f32::EPSILON
            || settings.frequency_penalty != 0.0
            || settings.presence_penalty != 0.0
        {
            stages.push(LlamaSampler::penalties(
                model.facts().n_vocab,
                PENALTY_LAST_N,
                settings.repeat_penalty,
                settings.frequency_penalty,
                settings.presence_penalty,
            ));
        }
        if settings.is_greedy() {
            stages.push(LlamaSampler::greedy());
        } else {
            if settings.top_k > 0 {
                stages.push(LlamaSampler::top_k(settings.top_k));
            }
            if settings.top_p < 1.0 {
                stages.push(LlamaSampler::top_p(settings.top_p, 1));
            }
            if settings.min_p > 0.0 {
                stages.push(LlamaSampler::min_p(settings.min_p, 1));
            }
            stages.push(LlamaSampler::temp(settings.temp));
            stages.push(LlamaSampler::dist(settings.seed));
        }
        let mut chain = LlamaSampler::chain_simple(stages);
        // The repeat penalty needs the recent history, also after a restore.
        let tail = &history[history.len().saturating_sub(PENALTY_LAST_N as usize)..];
        chain.accept_many(tail.iter().map(|&t| LlamaToken(t)));
        Self {
            chain,
            grammar: None,
            pending: None,
        }
    }

    /// Restricts sampling to text `grammar` accepts; once it is complete only
    /// end-of-generation tokens remain.
    pub fn constrain(&mut self, model: &super::Model, grammar: &Grammar) -> Result<(), LlamaError> {
        let sampler = match grammar {
            Grammar::Gbnf(gbnf) => {
                LlamaSampler::grammar(model.llama(), gbnf, "root").map_err(refused)
            }
            Grammar::Lark(lark) => model
                .guidance()
                .and_then(|g| g.matcher(lark))
                .map(LlamaSampler::from),
        };
        self.set_grammar(model, sampler)
    }

    /// Like [`Sampler::constrain`], but the grammar waits until the reply contains
    /// `opening` (`tool_choice: auto`): text before it is free, and the grammar, which
    /// must start with `opening`, holds from there. GBNF uses llama.cpp's lazy grammar;
    /// Lark waits here, and is built ahead so that a refusal comes now.
    pub fn constrain_after(
        &mut self,
        model: &super::Model,
        grammar: &Grammar,
        opening: &str,
    ) -> Result<(), LlamaError> {
        match grammar {
            Grammar::Gbnf(gbnf) => {
                // llama.cpp feeds the grammar the reply from the pattern's first group on.
                let pattern = format!("({})", regex_escape(opening));
                let sampler = LlamaSampler::grammar_lazy_patterns(
                    model.llama(),
                    gbnf,
                    "root",
                    &[pattern],
                    &[],
                );
                self.set_grammar(model, sampler.map_err(refused))
            }
            Grammar::Lark(lark) => {
                self.pending = Some(Pending::new(model.guidance()?, lark, opening)?);
                Ok(())
            }
        }
    }

    fn set_grammar(
        &mut self,
        model: &super::Model,
        sampler: Result<LlamaSampler, LlamaError>,
    ) -> Result<(), LlamaError> {
        self.grammar = Some((sampler?, model.llama().vocab().eos()));
        Ok(())
    }

    pub(super) fn sample(
        &mut self,
        model: &super::Model,
        ctx: &LlamaContext<'_>,
        idx: i32,
    ) -> TokenId {
        let Some((grammar, eos)) = &mut self.grammar else {
            let token = self.chain.sample(ctx, idx);
            let opened = self.pending.as_mut().and_then(|p| {
                let mut piece = Vec::new();
                model.token_bytes(token.0, false, &mut piece);
                // Built when the pending grammar was made (once per model): not an error now.
                p.push(model.guidance().ok()?, token, &piece)
            });
            if let Some(opened) = opened {
                self.pending = None;
                match opened {
                    Ok(grammar) => self.grammar = Some((grammar, model.llama().vocab().eos())),
                    Err(e) => tracing::warn!("tool_choice auto: {e}; the call is unconstrained"),
                }
            }
            return token.0;
        };
        let mut candidates = ctx.token_data_array_ith(idx);
        candidates.apply_sampler(grammar);
        candidates.apply_sampler(&mut self.chain);
        let token = candidates.selected_token().unwrap_or(*eos);
        grammar.accept(token);
        self.chain.accept(token);
        token.0
    }
}

fn refused(e: llama_cpp_2::GrammarError) -> LlamaError {
    LlamaError::Unsupported(format!("llama.cpp refused the grammar: {e}"))
}

/// `text` as a regular expression (ECMAScript, llama.cpp's `std::regex`) that matches it
/// literally.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A generated token's log-probability under the model (before sampling transforms), with
/// the most likely alternatives.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TokenLogprob {
    pub token: TokenId,
    pub logprob: f32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<(TokenId, f32)>,
}

impl TokenLogprob {
    /// Log-softmax of `logits` at `token`, plus the `top_n` best alternatives.
    pub fn from_logits(logits: &[f32], token: TokenId, top_n: usize) -> Self {
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
        let log_z = f64::from(max) + sum.ln();
        let lp = |t: usize| (f64::from(logits[t]) - log_z) as f32;
        let logprob = logits
            .get(token as usize)
            .map(|_| lp(token as usize))
            .unwrap_or(f32::NEG_INFINITY);
        let mut top = Vec::new();
        if top_n > 0 {
            let mut idx: Vec<usize> = (0..logits.len()).collect();
            let n = top_n.min(idx.len());
            idx.select_nth_unstable_by(n - 1, |&a, &b| logits[b].total_cmp(&logits[a]));
            idx.truncate(n);
            idx.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
            top = idx.into_iter().map(|t| (t as TokenId, lp(t))).collect();
        }
        Self {
            token,
            logprob,
            top,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn call_openings_escape_to_literal_patterns() {
        assert_eq!(super::regex_escape("<tool_call>"), "<tool_call>");
        assert_eq!(super::regex_escape("[TOOL_CALLS]"), "\\[TOOL_CALLS\\]");
        assert_eq!(super::regex_escape("{\"tool_call\""), "\\{\"tool_call\"");
    }
}
