//! The committed completions and man pages match what the CLI generates.
//! Regenerate with: `KVRUN_BLESS=1 cargo test --release --test it generated_files::`

#[test]
fn completions_and_man_pages_are_fresh() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("KVRUN_BLESS").is_some();
    let mut stale = Vec::new();
    for (rel, bytes) in kvrun::commands::generated_files().unwrap() {
        let path = root.join(&rel);
        if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            if bless {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &bytes).unwrap();
            } else {
                stale.push(rel.display().to_string());
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files {stale:?}; regenerate with \
         `KVRUN_BLESS=1 cargo test --release --test it generated_files::`"
    );
}
