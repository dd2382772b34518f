//! `/model MODEL`: a conversation continues with another model in a new session. A model's
//! KV is its own (page ids chain its fingerprint), so this is a fork, said plainly: the
//! session left keeps its model and its cache, and the new one renders the messages with
//! the new model's template and prefills them once, at the next turn.

use super::{Active, Carried, Chat};
use crate::chat::protocol::ChatEvent;
use crate::dialogue::Dialogue;
use crate::format::thousands;
use crate::service::handle::Opened;

impl Chat<'_, '_> {
    /// Saves the active session and names the new one; the chat thread then leaves this
    /// model's engine and starts `model`'s ([`Self::carry_in`] continues there).
    pub(super) fn leave_for_model(&mut self, model: &str) -> Result<(), String> {
        if self.active.conversation.raw {
            return Err("a --raw chat has no messages to carry to another model".into());
        }
        let choice = crate::models::choose(
            Some(model),
            &crate::config::FileConfig::default(),
            &self.options.paths,
            crate::models::Purpose::Chat,
        );
        crate::models::validate(&choice).map_err(|e| e.to_string())?;
        if same_file(&choice.path, &self.options.model.path) {
            return Err(format!("the chat is on {model} already"));
        }
        self.save()?;
        let stem = choice
            .path
            .file_stem()
            .map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
        // Room for the model's part and a `-N` suffix within a name's 64 characters.
        let from: String = self.active.name.chars().take(20).collect();
        let session = self.free_name(&format!("{from}-{}", name_part(&stem)));
        self.send(ChatEvent::Info(format!(
            "forking '{}' into '{session}' on {stem}: KV belongs to one model, so {stem} \
             prefills the conversation's messages at the next turn; '{}' keeps its model",
            self.active.name, self.active.name
        )));
        self.leaving_for = Some(Carried {
            model: choice,
            session,
            from: self.active.name.clone(),
            messages: self.active.conversation.messages.clone(),
        });
        Ok(())
    }

    /// Makes the carried conversation the active one, in its new (empty) session, and
    /// saves it there.
    pub(super) fn carry_in(&mut self, opened: Opened, carried: Carried) {
        let conversation = match Dialogue::carried_over(self.model, carried.messages) {
            Ok(conversation) => conversation,
            Err(e) => {
                self.send(ChatEvent::Error(format!(
                    "the conversation could not be rendered for this model ({e}); starting \
                     '{}' empty",
                    opened.session
                )));
                Dialogue::new(self.model, false, self.options.system.as_deref())
            }
        };
        let tokens = conversation.seq.len();
        self.active = Active {
            name: opened.session,
            conversation,
        };
        self.send(ChatEvent::Info(format!(
            "now in '{}' (forked from '{}'): {} tokens to prefill at the next turn",
            self.active.name,
            carried.from,
            thousands(tokens as u64)
        )));
        self.send_switched();
        if let Err(e) = self.save() {
            self.send(ChatEvent::Error(e));
        }
        self.send_sessions();
    }

    /// `base`, or `base-2`, `base-3`, … : the first name no session has.
    fn free_name(&self, base: &str) -> String {
        let taken = |name: &str| self.catalog.session_dir(name).exists();
        if !taken(base) {
            return base.to_string();
        }
        (2..)
            .map(|n| format!("{base}-{n}"))
            .find(|name| !taken(name))
            .unwrap_or_else(|| base.to_string())
    }
}

/// A model file's stem as part of a session name: characters a name may not hold become
/// `-`, and it is kept short.
fn name_part(stem: &str) -> String {
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(36)
        .collect()
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
