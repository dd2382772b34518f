//! The sessions API (`/v1/kvrun/sessions`): list, show, pin, unpin and remove, and its
//! errors.

use serde_json::json;

use super::*;

#[test]
fn the_sessions_api_lists_shows_pins_and_removes() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &[]);
    let r = server.post(
        "/v1/chat/completions",
        &chat("keep me", 4),
        &[("x-session-id", "notes")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let list = server.get("/v1/kvrun/sessions", &[]).json();
    let row = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "notes")
        .unwrap_or_else(|| panic!("{list}"))
        .clone();
    assert_eq!(row["served"], true, "{row}");
    assert_eq!(row["named"], true, "{row}");
    assert!(
        ["hot", "warm", "cold"].contains(&row["tier"].as_str().unwrap()),
        "{row}"
    );
    assert!(row["tokens"].as_u64().unwrap() > 0, "{row}");

    let shown = server.get("/v1/kvrun/sessions/notes", &[]);
    assert_eq!(shown.status, 200, "{}", shown.body);
    // The session records the template its chat request was rendered with.
    assert_eq!(
        shown.json()["chat_template"]["name"],
        "tokenizer.chat_template",
        "{}",
        shown.body
    );
    assert!(
        shown.json()["tokens"].as_u64().unwrap() > 0,
        "{}",
        shown.body
    );
    assert_eq!(
        server
            .post("/v1/kvrun/sessions/notes/pin", &json!({}), &[])
            .status,
        200
    );
    assert_eq!(
        server.get("/v1/kvrun/sessions/notes", &[]).json()["pinned"],
        true
    );
    assert_eq!(
        server
            .post("/v1/kvrun/sessions/notes/unpin", &json!({}), &[])
            .status,
        200
    );
    assert_eq!(
        server.get("/v1/kvrun/sessions/notes", &[]).json()["pinned"],
        false
    );

    for (path, status) in [
        ("/v1/kvrun/sessions/nobody", 404),
        ("/v1/kvrun/sessions/..bad", 400),
    ] {
        let r = server.get(path, &[]);
        assert_eq!(r.status, status, "{path}: {}", r.body);
        assert!(r.json()["error"]["message"].is_string(), "{path}");
    }
    let gone = server.post("/v1/kvrun/sessions/nobody/pin", &json!({}), &[]);
    assert_eq!(gone.status, 404, "{}", gone.body);

    let deleted = server.delete("/v1/kvrun/sessions/notes");
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let list = server.get("/v1/kvrun/sessions", &[]).json();
    assert!(
        !list["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "notes"),
        "{list}"
    );
    assert!(!home.path().join("sessions/notes").exists());
}
