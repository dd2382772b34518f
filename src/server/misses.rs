//! The "why did this miss" diagnostic: each conversation's previous prompt is kept (a
//! bounded number of them), and a new prompt that diverges from it before its end is
//! logged with the first differing token position and a short excerpt, and counted. That
//! makes volatile prefixes (a per-request nonce, a timestamp in a system prompt) visible.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::engine::{Model, TokenId};

use super::state::ServerCounters;

/// Conversations whose previous prompt is remembered; the least recent is forgotten.
const REMEMBERED: usize = 64;
/// Tokens of context shown on each side of a divergence.
const EXCERPT_TOKENS: usize = 12;

#[derive(Debug, Default)]
pub struct PromptHistory {
    inner: Mutex<Recent>,
}

#[derive(Debug, Default)]
struct Recent {
    prompts: HashMap<String, Vec<TokenId>>,
    order: VecDeque<String>,
}

/// Where a prompt stopped extending the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The first differing token (tokens before it agree).
    pub position: usize,
    pub previous_len: usize,
}

/// Where `prompt` diverges from `previous` before `previous` ends, if it does.
pub fn divergence(previous: &[TokenId], prompt: &[TokenId]) -> Option<Divergence> {
    let same = previous
        .iter()
        .zip(prompt)
        .take_while(|(a, b)| a == b)
        .count();
    (same < previous.len()).then_some(Divergence {
        position: same,
        previous_len: previous.len(),
    })
}

impl PromptHistory {
    /// Records `prompt` as `session`'s latest; reports (log + counter) an early divergence
    /// from the one before.
    pub fn observe(
        &self,
        session: &str,
        prompt: &[TokenId],
        cached: usize,
        model: &Model,
        counters: &ServerCounters,
    ) {
        let previous = {
            let mut recent = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            recent.replace(session, prompt.to_vec())
        };
        let Some(previous) = previous else { return };
        let Some(miss) = divergence(&previous, prompt) else {
            return;
        };
        counters.record_early_prefix_miss();
        let excerpt = |tokens: &[TokenId]| {
            let from = miss.position.saturating_sub(EXCERPT_TOKENS);
            let to = (miss.position + EXCERPT_TOKENS).min(tokens.len());
            model.tokens_text(&tokens[from..to])
        };
        tracing::info!(
            session,
            position = miss.position,
            previous_tokens = miss.previous_len,
            cached,
            "prompt diverged from the conversation's previous prompt at token {}: before {:?}, now {:?}",
            miss.position,
            excerpt(&previous),
            excerpt(prompt),
        );
    }
}

impl Recent {
    fn replace(&mut self, session: &str, prompt: Vec<TokenId>) -> Option<Vec<TokenId>> {
        let previous = self.prompts.insert(session.to_string(), prompt);
        self.order.retain(|s| s != session);
        self.order.push_back(session.to_string());
        while self.order.len() > REMEMBERED {
            if let Some(oldest) = self.order.pop_front() {
                self.prompts.remove(&oldest);
            }
        }
        previous
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_is_no_divergence() {
        assert_eq!(divergence(&[1, 2, 3], &[1, 2, 3, 4, 5]), None);
        assert_eq!(divergence(&[], &[1]), None);
    }

    #[test]
    fn early_change_is_found() {
        assert_eq!(
            divergence(&[1, 2, 3, 4], &[1, 9, 3, 4, 5]),
            Some(Divergence {
                position: 1,
                previous_len: 4
            })
        );
        // A shorter prompt that agrees so far still cannot reuse the rest.
        assert_eq!(divergence(&[1, 2, 3], &[1, 2]).map(|d| d.position), Some(2));
    }

    #[test]
    fn history_is_bounded() {
        let mut recent = Recent::default();
        for i in 0..(REMEMBERED + 10) {
            recent.replace(&format!("s{i}"), vec![i as TokenId]);
        }
        assert_eq!(recent.prompts.len(), REMEMBERED);
        assert!(!recent.prompts.contains_key("s0"));
        assert_eq!(recent.replace("s70", vec![7]), Some(vec![70]));
    }
}
