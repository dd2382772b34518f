//! Repairing a save whose commit found pages missing (a gc that did not honour the writer's
//! lease took them, a write failed): its manifest landed with the token log, and the pages
//! it names but the store lacks are captured again from the context, which still holds
//! them, by a save more. [`super::LiveSession::save`] does it before it returns; the server
//! asks [`LiveSession::needs_repair`] between batch steps and at shutdown.

use super::commit::SaveOrigin;
use super::{ConversationState, LiveSession};
use crate::llama::Context;
use crate::sequence::Sequence;
use crate::session::kv_error::LiveResult as Result;

/// Saves more after one whose commit found pages missing (each recaptures them): a gc that
/// keeps taking them, or a store that keeps losing them, is not chased for ever.
pub(super) const MAX_REPAIRS: u32 = 2;

impl LiveSession<'_> {
    /// Whether the manifest on disk names pages its commit found missing, and a repair
    /// ([`Self::repair_in_background`]) is still worth a try.
    pub fn needs_repair(&self) -> bool {
        self.ledger.incomplete && self.ledger.repairs < MAX_REPAIRS
    }

    /// Saves the conversation again as its last save recorded it, so that the pages that
    /// save found missing are captured (the context still holds them) and written. Its
    /// outcome comes back like an end-of-reply save's whose client does not save.
    pub fn repair_in_background(&mut self, ctx: &mut Context<'_>, seq: &Sequence) -> Result<f64> {
        self.ledger.repairs += 1;
        let Some(m) = self.latest().cloned() else {
            return Ok(0.0);
        };
        let state = ConversationState {
            messages: &m.messages,
            rendered_len: m.rendered_len,
            raw: m.raw,
            template: m.chat_template.clone(),
            // (Carried over from the last manifest by the plan.)
            cache_miss: None,
        };
        let origin = SaveOrigin::ReplyEnd {
            client_saves: false,
        };
        self.save_in_background(ctx, seq, state, origin, None)
    }
}
