//! Why a chat template could not be loaded or rendered.

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("chat template '{name}' does not compile: {detail}")]
    Syntax { name: String, detail: String },
    #[error("chat template '{name}' failed to render: {detail}")]
    Render { name: String, detail: String },
    #[error("message {index}: {detail}")]
    BadMessage { index: usize, detail: String },
    #[error(
        "message content contains special-token text ({text}) that chat template '{name}' \
         treats differently from plain text; remove it or use --raw"
    )]
    Injection { name: String, text: String },
}
