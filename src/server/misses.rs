//! The "why did this miss" diagnostic. Recent prompts are kept (a bounded number, one per
//! conversation), and two kinds of miss are logged and counted:
//! - a conversation whose new prompt leaves its own previous prompt before that one's end
//!   (the harness rewrote its history);
//! - a new conversation whose prompt agrees with a recent one's up to some token, differs for
//!   a short span, then agrees again for at least a page. That is a volatile span (a nonce,
//!   a timestamp, a git status in a system prompt) in front of a long shared prefix: every
//!   token after it is prefilled again, because KV after a difference cannot be reused.
//!
//! Both log the position and the text on each side, so the user sees what changed.

use crate::session::family::member_index;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::llama::{Model, TokenId};

use super::counters::ServerCounters;

/// Conversations whose previous prompt is remembered; the least recent is forgotten.
const REMEMBERED: usize = 64;
/// Tokens of context shown on each side of a divergence.
const EXCERPT_TOKENS: usize = 12;
/// Tokens that must agree to count as agreeing again after a difference.
const ANCHOR_TOKENS: usize = 16;
/// How far past a divergence a realignment is looked for (bounds the work per request).
const REALIGN_WINDOW: usize = 8192;
/// A shared stretch after a volatile span worth reporting: one KV page.
const MIN_LOST_TOKENS: usize = 256;

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

/// Where two prompts agree again after diverging: `previous[previous_at..]` and
/// `prompt[prompt_at..]` share their first `tokens` tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Realignment {
    pub previous_at: usize,
    pub prompt_at: usize,
    pub tokens: usize,
}

/// The earliest place (by `previous`'s position) past `from` where the prompts agree again
/// for at least [`ANCHOR_TOKENS`], looked for within [`REALIGN_WINDOW`] tokens of `from`.
pub fn realignment(previous: &[TokenId], prompt: &[TokenId], from: usize) -> Option<Realignment> {
    let window = |tokens: &[TokenId]| from..tokens.len().min(from + REALIGN_WINDOW);
    let mut starts: HashMap<&[TokenId], usize> = HashMap::new();
    for at in window(prompt) {
        if let Some(anchor) = prompt.get(at..at + ANCHOR_TOKENS) {
            starts.entry(anchor).or_insert(at);
        }
    }
    window(previous).find_map(|previous_at| {
        let anchor = previous.get(previous_at..previous_at + ANCHOR_TOKENS)?;
        let &prompt_at = starts.get(anchor)?;
        let tokens = previous[previous_at..]
            .iter()
            .zip(&prompt[prompt_at..])
            .take_while(|(a, b)| a == b)
            .count();
        Some(Realignment {
            previous_at,
            prompt_at,
            tokens,
        })
    })
}

fn common_prefix(a: &[TokenId], b: &[TokenId]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl PromptHistory {
    /// Records `prompt` as `session`'s latest, and reports (log + counter) an early
    /// divergence from the one before, or, for a new conversation, a volatile span in front
    /// of a long prefix it shares with a recent conversation.
    pub fn observe(
        &self,
        session: &str,
        family: Option<&str>,
        prompt: &[TokenId],
        cached: usize,
        model: &Model,
        counters: &ServerCounters,
    ) {
        let (previous, closest) = {
            let mut recent = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let previous = recent.replace(session, prompt.to_vec());
            let closest = previous
                .is_none()
                .then(|| recent.closest_other(session, prompt))
                .flatten();
            (previous, closest)
        };
        // A family's new member (its prompt extended none of them) left the member it is
        // closest to: that is the family's own conversation diverging, not a new one.
        let (previous, closest) = match (previous, closest) {
            (None, Some((other, other_prompt)))
                if family.is_some_and(|f| member_index(&other, f).is_some()) =>
            {
                (Some(other_prompt), None)
            }
            pair => pair,
        };
        let excerpt = |tokens: &[TokenId], at: usize| {
            let from = at.saturating_sub(EXCERPT_TOKENS);
            let to = (at + EXCERPT_TOKENS).min(tokens.len());
            model.tokens_text(&tokens[from..to])
        };
        if let Some(previous) = previous {
            let Some(miss) = divergence(&previous, prompt) else {
                return;
            };
            counters.record_early_prefix_miss();
            let again = realignment(&previous, prompt, miss.position)
                .map(|r| {
                    format!(
                        "; they agree again from token {} for {} tokens",
                        r.prompt_at, r.tokens
                    )
                })
                .unwrap_or_default();
            tracing::info!(
                session,
                position = miss.position,
                previous_tokens = miss.previous_len,
                cached,
                "prompt diverged from the conversation's previous prompt at token {}: before {:?}, now {:?}{again}",
                miss.position,
                excerpt(&previous, miss.position),
                excerpt(prompt, miss.position),
            );
        } else if let Some((other, other_prompt)) = closest {
            let position = common_prefix(&other_prompt, prompt);
            let Some(again) = realignment(&other_prompt, prompt, position) else {
                return;
            };
            if again.tokens < MIN_LOST_TOKENS {
                return;
            }
            counters.record_volatile_prefix(again.tokens);
            tracing::info!(
                session,
                other = other.as_str(),
                position,
                cached,
                lost_tokens = again.tokens,
                "a volatile span in front of a shared prefix: this new conversation's prompt \
                 agrees with {other:?}'s up to token {position} ({:?} there, {:?} here), then \
                 again from token {} for {} tokens, which are prefilled again because KV after \
                 a difference cannot be reused",
                excerpt(&other_prompt, position),
                excerpt(prompt, position),
                again.prompt_at,
                again.tokens,
            );
        }
    }
}

impl Recent {
    /// Another conversation's prompt sharing the longest prefix with `prompt` (the most
    /// recent one on a tie).
    fn closest_other(&self, session: &str, prompt: &[TokenId]) -> Option<(String, Vec<TokenId>)> {
        // Oldest first: `max_by_key` keeps the last of equals, the most recent.
        self.order
            .iter()
            .filter(|name| name.as_str() != session)
            .filter_map(|name| Some((name, self.prompts.get(name)?)))
            .max_by_key(|(_, tokens)| common_prefix(tokens, prompt))
            .map(|(name, tokens)| (name.clone(), tokens.clone()))
    }

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
    fn a_volatile_span_is_found_where_the_prompts_agree_again() {
        let shared: Vec<TokenId> = (100..400).collect();
        let before = [&[1, 2, 3, 7, 7][..], &shared, &[5]].concat();
        // One token differs and one is inserted at position 3; then 300 agree again.
        let after = [&[1, 2, 3, 8, 8, 8][..], &shared, &[6, 6]].concat();
        let from = common_prefix(&before, &after);
        assert_eq!(from, 3);
        assert_eq!(
            realignment(&before, &after, from),
            Some(Realignment {
                previous_at: 5,
                prompt_at: 6,
                tokens: 300
            })
        );
        // Prompts that never agree again have no realignment.
        let other: Vec<TokenId> = (1000..1400).collect();
        assert_eq!(realignment(&before, &other, 0), None);
    }

    #[test]
    fn the_closest_other_conversation_shares_the_longest_prefix() {
        let mut recent = Recent::default();
        recent.replace("a", vec![1, 2, 9]);
        recent.replace("b", vec![1, 2, 3, 4]);
        recent.replace("c", vec![1, 5]);
        let (name, _) = recent.closest_other("new", &[1, 2, 3, 0]).unwrap();
        assert_eq!(name, "b");
        assert!(recent.closest_other("a", &[1]).is_some());
        let mut alone = Recent::default();
        alone.replace("a", vec![1]);
        assert!(alone.closest_other("a", &[1]).is_none());
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
