//! Garbage collection beside a live session, on real llama.cpp: pages its background writer
//! stores during the prefill are named by no manifest until the save, and a gc in between
//! (`kvrun gc` in another process, another server's cold budget) must not take them; pages
//! lost anyway are written again, and the token log is saved whatever happens to them, or to
//! the context's rows.

use std::path::Path;

use crate::common::inproc::THREADS;
use crate::common::*;
use kvrun::llama::{Context, Model};
use kvrun::paths::Paths;
use kvrun::sequence::{NoObserver, Sequence};
use kvrun::session::catalog::SessionCatalog;
use kvrun::session::live::{ConversationState, LiveSession, SessionObserver};
use kvrun::session::SessionBinding;
use kvrun::settings::{FlashAttn, KvType, LlamaSettings, SamplingSettings};

const RAW: ConversationState<'static> = ConversationState {
    messages: &[],
    rendered_len: 0,
    raw: true,
    template: None,
    cache_miss: None,
};

/// Runs `body` with a live session "g" over `model` whose prefill of two pages and more has
/// been stored by the background writer, and no save yet: the window the gc must respect.
/// Returns the session's KV length; the session is closed by then.
fn with_prefilled_session(
    home: &Home,
    model_path: &Path,
    body: impl FnOnce(&SessionCatalog, &mut Context<'_>, &mut LiveSession<'_>, &Sequence),
) -> usize {
    let catalog = SessionCatalog::open(&Paths::under(home.path())).unwrap();
    let model = Model::load(model_path, 0).unwrap();
    let llama = LlamaSettings {
        ctx_size: 4096,
        threads: THREADS.parse().unwrap(),
        gpu_layers: 0,
        batch_size: kvrun::settings::DEFAULT_BATCH_SIZE,
        kv_type: KvType::F16,
        flash_attn: FlashAttn::Auto,
    };
    let mut ctx = Context::new(&model, &llama, 256, 2).unwrap();
    let lock = catalog.lock("g").unwrap();
    let sessions = SessionBinding::new(&catalog, model_path, &model, &ctx, llama).unwrap();
    let mut live = sessions.open("g", lock, None, SamplingSettings::greedy());
    let mut seq = Sequence::new();
    seq.append(&model.tokenize(&long_text(2), false));
    live.reuse_prefix(&mut ctx, &mut seq).unwrap();
    let mut observer = SessionObserver {
        session: &mut live,
        inner: &mut NoObserver,
    };
    seq.sync(&mut ctx, false, &mut observer).unwrap();
    assert!(seq.kv_len() > 512, "{}", seq.kv_len());
    // Every page the prefill filled is stored (and nothing names it yet).
    live.wait_for_commits();
    assert!(object_files(home).len() >= 2, "the writer stored no pages");
    body(&catalog, &mut ctx, &mut live, &seq);
    seq.kv_len()
}

/// A fresh process restores the session `g` from its pages: every full page, no prefill.
fn assert_restores_whole(home: &Home, kv_len: usize, what: &str) {
    let out = home.run(&[
        "session", "restore", "g", "--check", "--json", "-t", THREADS,
    ]);
    assert!(out.status.success(), "{what}: {}", stderr(&out));
    let check: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let full_pages = (kv_len / 256 * 256) as u64;
    assert!(
        check["restored_tokens"].as_u64().unwrap() >= full_pages,
        "{what}: {check}"
    );
}

/// `kvrun gc` in another process between the prefill's page writes and the save's commit:
/// the pages are leased, so it keeps every one, and the save writes only its tail.
#[test]
fn a_gc_between_the_page_writes_and_the_commit_keeps_the_pages() {
    for path in [tiny_model(), default_model()] {
        let what = path.display().to_string();
        let home = Home::new();
        let kv_len = with_prefilled_session(&home, &path, |_, ctx, live, seq| {
            let before = object_files(&home);
            let out = home.run(&["gc", "--json"]);
            assert!(out.status.success(), "{what}: {}", stderr(&out));
            let gc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(gc["removed"], 0, "{what}: {gc}");
            assert_eq!(object_files(&home), before, "{what}: gc took pages");
            let saved = live.save(ctx, seq, RAW).unwrap();
            assert_eq!(saved.missing_objects, 0, "{what}");
            // The tail, and on the iSWA model the last window rows: the pages were kept.
            assert!(saved.objects_written <= 2, "{what}: {saved:?}");
            // Named by the manifest now, the lease lists nothing.
            let lease_dir = Paths::under(home.path()).objects().join("leases");
            for lease in walk_files(&lease_dir) {
                let text = std::fs::read_to_string(&lease).unwrap();
                assert_eq!(text.lines().count(), 1, "{what}: {text}");
            }
        });
        assert_restores_whole(&home, kv_len, &what);
        // The session closed: its lease went with it.
        let lease_dir = Paths::under(home.path()).objects().join("leases");
        assert!(walk_files(&lease_dir).is_empty(), "{what}");
    }
}

/// Pages lost between the prefill and the save anyway (a gc of a kvrun without leases, a
/// hand-deleted file): a background save still commits the whole token log, the session
/// hears which pages were missing, and a repair from the context writes them again.
#[test]
fn pages_lost_before_the_commit_never_lose_the_log_and_are_written_again() {
    let home = Home::new();
    let kv_len = with_prefilled_session(&home, &tiny_model(), |catalog, ctx, live, seq| {
        let lost = object_files(&home);
        for file in &lost {
            std::fs::remove_file(file).unwrap();
        }
        let origin = kvrun::session::live::SaveOrigin::Requested;
        live.save_in_background(ctx, seq, RAW, origin, None)
            .unwrap();
        live.wait_for_commits();
        let outcomes = live.take_outcomes();
        let report = outcomes[0].result.as_ref().expect("the log is committed");
        assert_eq!(report.missing_objects, lost.len(), "{report:?}");
        assert!(
            report.warnings.iter().any(|w| w.contains("missing")),
            "{:?}",
            report.warnings
        );
        // The manifest landed with the whole log, naming the pages the store lacks.
        let manifest = catalog.read_manifest("g").unwrap();
        assert_eq!(manifest.tokens, seq.tokens());
        let row = catalog.list().unwrap().remove(0);
        assert_eq!(row.missing_objects, lost.len(), "{row:?}");
        assert!(live.needs_repair());

        // The repair recaptures them from the context.
        live.repair_in_background(ctx, seq).unwrap();
        live.wait_for_commits();
        let outcomes = live.take_outcomes();
        let report = outcomes[0].result.as_ref().unwrap();
        assert_eq!(report.missing_objects, 0, "{report:?}");
        assert!(report.objects_written >= lost.len(), "{report:?}");
        assert!(!live.needs_repair());
        assert_eq!(catalog.list().unwrap()[0].missing_objects, 0);
    });
    assert_restores_whole(&home, kv_len, "tiny");

    // The same loss before a save that waits for its commit: it retries on its own, the
    // pages are back before it returns, and it has nothing to warn about.
    let home = Home::new();
    let kv_len = with_prefilled_session(&home, &tiny_model(), |_, ctx, live, seq| {
        let lost = object_files(&home);
        for file in &lost {
            std::fs::remove_file(file).unwrap();
        }
        let saved = live.save(ctx, seq, RAW).unwrap();
        assert_eq!(saved.missing_objects, 0, "{saved:?}");
        assert!(saved.objects_written >= lost.len(), "{saved:?}");
        assert!(
            saved.warnings.iter().all(|w| !w.contains("missing")),
            "{:?}",
            saved.warnings
        );
    });
    assert_restores_whole(&home, kv_len, "tiny, waited save");
}

/// A context that no longer holds the log's rows (llama.cpp lost or refused them): the save
/// cannot read the KV out, so it saves the token log alone and says so, and the next turn
/// recomputes the session and answers as a save of its KV would have.
#[test]
fn a_save_that_cannot_read_the_kv_saves_the_log_alone() {
    // A full-attention cache, and a sliding-window one (whose window rows a save also keeps).
    for model in [tiny_model(), default_model()] {
        let what = model.display().to_string();
        let (lost, kept) = (Home::new(), Home::new());
        let (mut kv_len, mut log_len) = (0, 0);
        for home in [&lost, &kept] {
            let cleared = std::ptr::eq(home, &lost);
            kv_len = with_prefilled_session(home, &model, |catalog, ctx, live, seq| {
                assert_ne!(seq.kv_len() % 256, 0, "the save must capture a tail");
                if cleared {
                    ctx.clear_all();
                }
                let saved = live.save(ctx, seq, RAW).unwrap();
                let alone = saved.warnings.iter().any(|w| w.contains("saved alone"));
                assert_eq!(alone, cleared, "{what}: {saved:?}");
                let manifest = catalog.read_manifest("g").unwrap();
                assert_eq!(manifest.tokens, seq.tokens());
                assert_eq!(manifest.snapshot.is_none(), cleared);
                log_len = seq.tokens().len();
            });
        }
        let out = lost.run(&[
            "session", "restore", "g", "--check", "--json", "-t", THREADS,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let check: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(check["restored_tokens"], 0, "{what}: {check}");
        assert_eq!(
            check["tokens"].as_u64(),
            Some(log_len as u64),
            "{what}: {check}"
        );
        assert_restores_whole(&kept, kv_len, &what);

        let turn = |home: &Home| {
            let out = home.run(&[
                "run",
                "--session",
                "g",
                path_str(&model),
                "--raw",
                "-p",
                " and so on",
                "-n",
                "8",
                "--temp",
                "0",
                "-t",
                THREADS,
                "--json",
            ]);
            assert!(out.status.success(), "{}", stderr(&out));
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
        };
        let (recomputed, restored) = (turn(&lost), turn(&kept));
        assert_eq!(tokens(&recomputed), tokens(&restored), "{what}");
        assert!(recomputed["prefilled_tokens"].as_u64() > restored["prefilled_tokens"].as_u64());
    }
}
