//! A chunked restore's pipeline. `streams` reader threads each read every `streams`-th
//! chunk into two buffers of their own, while this thread hands the chunks to llama.cpp in
//! order and gives each buffer back to its reader. A reader moves on to its next chunk as
//! soon as its last one is read: no reader waits for another's pages, and the disk always
//! has reads queued. Chunks can then be small (a page each for an 8B model), so the load
//! that follows the last read is short. (Reading one chunk at a time, each waiting for the
//! slower of its pages, was slower in `bench restore --shape llama-8b`.)

use std::sync::mpsc;
use std::time::Instant;

use super::buffers::{keep_or_free, kept_buffer};
use crate::session::capture::RestorePhases;
use crate::session::kv_error::LiveError;

/// How a streamed restore ended.
pub(super) enum StreamEnd {
    /// Every chunk was read, checked and loaded.
    Loaded,
    /// A chunk's read failed; the chunks before it (`loaded` of them) are in the cache.
    ReadFailed { loaded: usize },
    /// llama.cpp refused a chunk.
    LoadFailed(LiveError),
}

/// A buffer goes back to its reader only while that reader has a chunk left to read into it.
fn reused(chunk: usize, streams: usize, chunks: usize) -> bool {
    chunk + 2 * streams < chunks
}

/// Reads chunks `0..chunks` with `read` on `streams` threads and loads them in order with
/// `load` on this thread. `read` fills the buffer it is given (`None` when a page failed
/// its checks); its phases are added to `phases`, whose `read_ms` becomes the wall time
/// until the last chunk was read. The buffers are kept for the next restore.
pub(super) fn stream_chunks(
    chunks: usize,
    streams: usize,
    read: impl Fn(usize, Vec<u8>, &mut RestorePhases) -> Option<Vec<u8>> + Sync,
    mut load: impl FnMut(usize, &[u8], &mut RestorePhases) -> Result<(), LiveError>,
    phases: &mut RestorePhases,
) -> StreamEnd {
    let started = Instant::now();
    let streams = streams.clamp(1, chunks.max(1));
    let read = &read;
    std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..streams)
            .map(|s| {
                let own = (s..chunks).step_by(streams).count();
                let mut spare: Vec<Vec<u8>> = (0..own.min(2)).map(|_| kept_buffer()).collect();
                let (filled_tx, filled) = mpsc::sync_channel(2);
                let (free, free_rx) = mpsc::channel::<Vec<u8>>();
                let reader = scope.spawn(move || {
                    for n in (s..chunks).step_by(streams) {
                        let Some(buffer) = spare.pop().or_else(|| free_rx.recv().ok()) else {
                            break;
                        };
                        let mut phases = RestorePhases::default();
                        let blob = read(n, buffer, &mut phases);
                        let failed = blob.is_none();
                        // This thread stops taking chunks after a failure: the reader too.
                        if filled_tx.send((blob, phases)).is_err() || failed {
                            break;
                        }
                    }
                    spare
                });
                (filled, free, reader)
            })
            .collect();
        let mut done = Vec::new();
        let mut end = StreamEnd::Loaded;
        let mut read_ms = 0.0;
        for n in 0..chunks {
            let (filled, free, _) = &lanes[n % streams];
            // A reader only panics on a bug; its chunk then reads as unusable.
            let Ok((blob, read_phases)) = filled.recv() else {
                end = StreamEnd::ReadFailed { loaded: n };
                break;
            };
            read_ms = started.elapsed().as_secs_f64() * 1e3;
            phases.add(&RestorePhases {
                read_ms: 0.0,
                ..read_phases
            });
            let Some(blob) = blob else {
                end = StreamEnd::ReadFailed { loaded: n };
                break;
            };
            if let Err(e) = load(n, &blob, phases) {
                done.push(blob);
                end = StreamEnd::LoadFailed(e);
                break;
            }
            match reused(n, streams, chunks) {
                // A reader that stopped early leaves it in the channel, dropped below.
                true => {
                    let _ = free.send(blob);
                }
                false => done.push(blob),
            }
        }
        phases.read_ms += read_ms;
        // Closing the channels ends a reader that waits for a buffer or to hand one over.
        for (filled, free, reader) in lanes {
            drop((filled, free));
            if let Ok(spare) = reader.join() {
                done.extend(spare);
            }
        }
        keep_or_free(done);
        end
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// Chunk `n`'s bytes: its number, in a buffer the reader was given.
    fn read_as_number(n: usize, mut buffer: Vec<u8>, _: &mut RestorePhases) -> Option<Vec<u8>> {
        buffer.clear();
        buffer.push(n as u8);
        Some(buffer)
    }

    #[test]
    fn chunks_load_in_order_whatever_the_number_of_readers() {
        for (chunks, streams) in [(0, 2), (1, 2), (2, 2), (7, 2), (9, 3), (5, 8), (6, 1)] {
            let mut loaded = Vec::new();
            let end = stream_chunks(
                chunks,
                streams,
                read_as_number,
                |n, blob, _| {
                    assert_eq!(blob, [n as u8]);
                    loaded.push(n);
                    Ok(())
                },
                &mut RestorePhases::default(),
            );
            assert!(matches!(end, StreamEnd::Loaded), "{chunks} / {streams}");
            assert_eq!(loaded, (0..chunks).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_failed_read_stops_the_loads_before_its_chunk_and_every_reader_ends() {
        let reads = AtomicUsize::new(0);
        let mut loaded = Vec::new();
        let end = stream_chunks(
            40,
            3,
            |n, buffer, phases| {
                reads.fetch_add(1, Ordering::Relaxed);
                (n != 5)
                    .then_some(())
                    .and_then(|()| read_as_number(n, buffer, phases))
            },
            |n, _, _| {
                loaded.push(n);
                Ok(())
            },
            &mut RestorePhases::default(),
        );
        assert!(matches!(end, StreamEnd::ReadFailed { loaded: 5 }));
        assert_eq!(loaded, [0, 1, 2, 3, 4]);
        // Each reader holds two buffers: none reads far past the failure.
        assert!(reads.load(Ordering::Relaxed) <= 5 + 1 + 2 * 3);
    }

    #[test]
    fn a_refused_load_ends_the_restore() {
        let loads = Mutex::new(0);
        let end = stream_chunks(
            10,
            2,
            read_as_number,
            |n, _, _| {
                *loads.lock().unwrap() += 1;
                match n {
                    3 => Err(LiveError::internal("refused")),
                    _ => Ok(()),
                }
            },
            &mut RestorePhases::default(),
        );
        assert!(matches!(end, StreamEnd::LoadFailed(_)));
        assert_eq!(*loads.lock().unwrap(), 4);
    }
}
