//! Creating an elastic context's next size off the engine thread.
//!
//! A llama.cpp context of many cells costs the allocation and clearing of its KV buffer:
//! about a second for 32k cells of the default model on this kind of machine, most of it
//! memory touched for the first time. On the engine thread every conversation would wait
//! through it. So the engine asks this thread for the next size before it is needed and
//! goes on decoding in the old context; when the new one arrives only the move of the hot
//! sequences' state (milliseconds) pauses decoding. The contexts the engine retires are
//! dropped here too, so that freeing their buffers does not pause it either.
//!
//! Creating a context computes nothing, so this thread never starts a compute thread team
//! of its own beside the engine's (see `bench batch` for why that matters on a CPU).

use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::thread::Scope;
use std::time::{Duration, Instant};

use crate::llama::{Context, LlamaError, Model};
use crate::settings::LlamaSettings;

/// What the engine asks for.
enum Job<'m> {
    Create {
        settings: LlamaSettings,
        page_tokens: u32,
        n_seq_max: u32,
    },
    /// A context the engine no longer uses, to be freed here.
    Retire(Box<Context<'m>>),
}

/// A context created on the builder thread.
pub(super) struct Built<'m> {
    /// The cells it was asked for.
    pub cells: u32,
    pub context: Result<Context<'m>, LlamaError>,
    /// How long creating it took on the builder thread.
    pub took: Duration,
}

/// The engine's end of the builder thread. At most one context is in the making.
pub(super) struct ContextBuilder<'m> {
    jobs: Sender<Job<'m>>,
    built: Receiver<Built<'m>>,
    /// Cells of the context being created, until the engine takes it.
    in_flight: Option<u32>,
}

impl<'m> ContextBuilder<'m> {
    /// Starts the thread in `scope`; it ends once this end is dropped.
    pub fn spawn<'scope>(
        scope: &'scope Scope<'scope, '_>,
        model: &'m Model,
    ) -> std::io::Result<Self>
    where
        'm: 'scope,
    {
        let (jobs, job_rx) = channel::<Job<'m>>();
        let (built_tx, built) = channel();
        std::thread::Builder::new()
            .name("kvrun-ctx-builder".into())
            .spawn_scoped(scope, move || {
                for job in job_rx {
                    match job {
                        Job::Create {
                            settings,
                            page_tokens,
                            n_seq_max,
                        } => {
                            let started = Instant::now();
                            let context = Context::new(model, &settings, page_tokens, n_seq_max);
                            let done = Built {
                                cells: settings.ctx_size,
                                context,
                                took: started.elapsed(),
                            };
                            if built_tx.send(done).is_err() {
                                break;
                            }
                        }
                        Job::Retire(context) => drop(context),
                    }
                }
            })?;
        Ok(Self {
            jobs,
            built,
            in_flight: None,
        })
    }

    /// Cells of the context in the making, if any.
    pub fn in_flight(&self) -> Option<u32> {
        self.in_flight
    }

    /// Starts creating a context with `settings` unless one is in the making already.
    pub fn request(&mut self, settings: LlamaSettings, page_tokens: u32, n_seq_max: u32) {
        if self.in_flight.is_some() {
            return;
        }
        let cells = settings.ctx_size;
        let job = Job::Create {
            settings,
            page_tokens,
            n_seq_max,
        };
        if self.jobs.send(job).is_ok() {
            self.in_flight = Some(cells);
        }
    }

    /// The context in the making, if it is ready.
    pub fn try_take(&mut self) -> Option<Built<'m>> {
        self.in_flight?;
        match self.built.try_recv() {
            Ok(built) => {
                self.in_flight = None;
                Some(built)
            }
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => self.lost(),
        }
    }

    /// Waits for the context in the making (None when nothing is).
    pub fn wait(&mut self) -> Option<Built<'m>> {
        self.in_flight?;
        match self.built.recv() {
            Ok(built) => {
                self.in_flight = None;
                Some(built)
            }
            Err(_) => self.lost(),
        }
    }

    /// The thread ended (it panicked): nothing is in the making any more.
    fn lost(&mut self) -> Option<Built<'m>> {
        let cells = self.in_flight.take()?;
        Some(Built {
            cells,
            context: Err(LlamaError::CreateContext {
                detail: "the context builder thread ended".into(),
            }),
            took: Duration::ZERO,
        })
    }

    /// Frees `context` on the builder thread (here, if that thread is gone).
    pub fn retire(&self, context: Context<'m>) {
        let _ = self.jobs.send(Job::Retire(Box::new(context)));
    }
}
