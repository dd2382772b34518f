//! llguidance, the grammar engine llama.cpp, vLLM and SGLang can use for JSON schemas: a
//! Lark grammar with embedded schemas becomes a token mask step by step, without the
//! rule expansion that makes llama.cpp's GBNF sampler refuse large schemas and slows it
//! (`kvrun bench grammar`).

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};

use super::LlamaError;

/// A model's token trie and llguidance's parser factory: built once per model (it walks
/// the whole vocabulary), then shared by every grammar.
pub struct Guidance {
    factory: ParserFactory,
}

impl Guidance {
    pub(super) fn new(model: &LlamaModel) -> Result<Self, LlamaError> {
        let env = LlamaSampler::llguidance_tok_env(model);
        let mut factory = ParserFactory::new_simple(&env)
            .map_err(|e| LlamaError::Unsupported(format!("llguidance: {e}")))?;
        // Grammar warnings go to the error, not to stderr.
        factory.quiet();
        Ok(Self { factory })
    }

    /// A matcher of the Lark `grammar`, at its start.
    pub(super) fn matcher(&self, grammar: &str) -> Result<Matcher, LlamaError> {
        let parser = self
            .factory
            .create_parser(TopLevelGrammar::from_lark(grammar.to_string()))
            .map_err(|e| LlamaError::Unsupported(format!("llguidance refused the grammar: {e}")))?;
        Ok(Matcher::new(Ok(parser)))
    }
}

/// A Lark grammar waiting for the reply to contain `opening` (`tool_choice: auto`): the
/// reply's text and tokens so far, to hand the grammar from the opening's token on.
pub(super) struct Pending {
    /// The grammar, which starts with `start: call` (the call from its opening on).
    grammar: String,
    opening: Vec<u8>,
    /// Built ahead, so a grammar llguidance refuses is known before the reply starts, and
    /// used as it is when the opening starts a token.
    matcher: Matcher,
    text: Vec<u8>,
    /// Each token of the reply and where its text starts in `text`.
    tokens: Vec<(LlamaToken, usize)>,
}

impl Pending {
    pub(super) fn new(
        guidance: &Guidance,
        grammar: &str,
        opening: &str,
    ) -> Result<Self, LlamaError> {
        if !grammar.starts_with(START) {
            return Err(LlamaError::Unsupported(format!(
                "a lazy Lark grammar starts with `{}`",
                START.trim()
            )));
        }
        Ok(Self {
            matcher: guidance.matcher(grammar)?,
            grammar: grammar.to_string(),
            opening: opening.as_bytes().to_vec(),
            text: Vec::new(),
            tokens: Vec::new(),
        })
    }

    /// Takes a sampled token and its text. Once the reply contains the opening, returns the
    /// grammar's sampler, past the reply's text from the opening on; or the reason it cannot
    /// hold (the reply then stays free).
    pub(super) fn push(
        &mut self,
        guidance: &Guidance,
        token: LlamaToken,
        piece: &[u8],
    ) -> Option<Result<LlamaSampler, LlamaError>> {
        let start = self.text.len();
        self.tokens.push((token, start));
        self.text.extend_from_slice(piece);
        let from = start.saturating_sub(self.opening.len());
        let at = from
            + self.text[from..]
                .windows(self.opening.len())
                .position(|w| w == self.opening.as_slice())?;
        Some(self.opened(guidance, at))
    }

    /// The grammar's sampler once the opening is found at byte `at` of the reply: fed the
    /// tokens from the one the opening starts in, with that token's text before the
    /// opening as a literal in front of the call.
    fn opened(&mut self, guidance: &Guidance, at: usize) -> Result<LlamaSampler, LlamaError> {
        let first = self.tokens.partition_point(|&(_, s)| s <= at) - 1;
        let before = &self.text[self.tokens[first].1..at];
        let mut matcher = if before.is_empty() {
            self.matcher.deep_clone()
        } else {
            let before = std::str::from_utf8(before)
                .map_err(|_| LlamaError::Unsupported("the call opens inside a character".into()))?;
            let literal = serde_json::to_string(before).expect("a string");
            let grammar = format!("start: {literal} call\n{}", &self.grammar[START.len()..]);
            guidance.matcher(&grammar)?
        };
        let tokens: Vec<u32> = self.tokens[first..]
            .iter()
            .map(|&(t, _)| t.0 as u32)
            .collect();
        matcher
            .consume_tokens(&tokens)
            .map_err(|e| LlamaError::Unsupported(format!("the call's opening: {e}")))?;
        Ok(LlamaSampler::from(matcher))
    }
}

/// How a lazy Lark grammar starts: the call is the rule `call`.
const START: &str = "start: call\n";
