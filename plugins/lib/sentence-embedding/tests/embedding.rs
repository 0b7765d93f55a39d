//! The model against reference values from a numpy forward of the same
//! weights (which match sentence-transformers), padding in batches, and the
//! errors of an incomplete model directory. The model's directory comes
//! from `PACKHOST_SEARCH_MODEL`, which `./dev test` sets.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sentence_embedding::{LoadError, Model};

fn model_dir() -> PathBuf {
    match std::env::var_os("PACKHOST_SEARCH_MODEL") {
        Some(dir) => PathBuf::from(dir),
        None => panic!(
            "PACKHOST_SEARCH_MODEL is not set: run these tests through `./dev test`, \
             which installs all-MiniLM-L6-v2 and names its directory there"
        ),
    }
}

fn model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| Model::load(&model_dir()).unwrap_or_else(|e| panic!("{e}")))
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Batch shapes change the order of sums: the same vector, to float noise.
fn assert_same_vector(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let worst = got
        .iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f32::max);
    assert!(worst < 1e-4, "{what}: differs by up to {worst}");
}

fn assert_close(what: &str, got: f32, want: f32) {
    assert!(
        (got - want).abs() < 1e-3,
        "{what}: got {got}, want {want} (within 1e-3)"
    );
}

const PAGER: &str = "who is carrying the pager this weekend";

#[test]
fn vectors_match_the_reference_forward() {
    let vectors = model()
        .embed(&[
            PAGER,
            "List who is on call now for a schedule",
            "Create a calendar event",
        ])
        .unwrap();
    assert!(vectors.iter().all(|v| v.len() == 384), "384 floats each");
    let want = [-0.12008, -0.02025, 0.00251, -0.07558, 0.05568, 0.04];
    for (i, (&got, want)) in vectors[0].iter().zip(want).enumerate() {
        assert_close(&format!("dimension {i} of {PAGER:?}"), got, want);
    }
    assert_close(
        "cosine with the on-call tool",
        cosine(&vectors[0], &vectors[1]),
        0.25183,
    );
    assert_close(
        "cosine with the calendar tool",
        cosine(&vectors[0], &vectors[2]),
        0.05855,
    );
    for vector in &vectors {
        assert_close("length", cosine(vector, vector).sqrt(), 1.0);
    }
}

#[test]
fn a_batch_gives_the_vectors_of_one_text_at_a_time() {
    let long = "word ".repeat(400);
    let texts = [
        "Create a calendar event",
        PAGER,
        "ok",
        "",
        long.as_str(),
        "Lists the open pull requests of a repository, newest first, with their authors, labels and review state",
    ];
    let batch = model().embed(&texts).unwrap();
    assert_eq!(batch.len(), texts.len());
    for (text, in_batch) in texts.iter().zip(&batch) {
        let alone = &model().embed(&[text]).unwrap()[0];
        assert_same_vector(
            &format!("{text:.40?} in a batch and alone"),
            in_batch,
            alone,
        );
    }
    // More texts than one forward pass takes, in an order that is not by length.
    let many: Vec<&str> = texts.iter().cycle().take(40).copied().collect();
    let vectors = model().embed(&many).unwrap();
    for (i, vector) in vectors.iter().enumerate() {
        assert_same_vector(&format!("text {i} of 40"), vector, &batch[i % texts.len()]);
    }
    assert!(model().embed(&[]).unwrap().is_empty());
}

#[test]
fn knows_whole_words_only() {
    let model = model();
    for word in ["schedule", "calendar", "weekend", "rotation"] {
        assert!(model.knows_word(word), "{word} is a word");
    }
    for word in ["##ing", "desgin", "pager", "[unused0]", "[cls]", ""] {
        assert!(!model.knows_word(word), "{word:?} is no word");
    }
}

#[test]
fn the_model_is_shared_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Model>();
}

#[test]
fn a_directory_without_the_tokenizer_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["config.json", "model.safetensors"] {
        std::os::unix::fs::symlink(model_dir().join(file), dir.path().join(file)).unwrap();
    }
    let error = Model::load(dir.path()).err().expect("no tokenizer.json");
    assert!(
        matches!(&error, LoadError::MissingFile { file: "tokenizer.json", dir: d } if d == dir.path()),
        "{error:?}"
    );
    let message = error.to_string();
    for part in [
        "`tokenizer.json`",
        &dir.path().display().to_string(),
        "./dev test",
    ] {
        assert!(message.contains(part), "{message:?} names {part}");
    }
}

#[test]
fn a_broken_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["config.json", "tokenizer.json"] {
        std::os::unix::fs::symlink(model_dir().join(file), dir.path().join(file)).unwrap();
    }
    std::fs::write(dir.path().join("model.safetensors"), b"not weights").unwrap();
    let message = Model::load(dir.path())
        .err()
        .expect("broken weights")
        .to_string();
    let weights = Path::new(dir.path()).join("model.safetensors");
    assert!(
        message.contains(&weights.display().to_string()),
        "{message}"
    );
}

#[test]
fn check_accepts_the_model_and_refuses_what_load_would() {
    Model::check(&model_dir()).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    for file in ["config.json", "tokenizer.json"] {
        std::os::unix::fs::symlink(model_dir().join(file), dir.path().join(file)).unwrap();
    }
    let weights = dir.path().join("model.safetensors");
    assert!(matches!(
        Model::check(dir.path()),
        Err(LoadError::MissingFile {
            file: "model.safetensors",
            ..
        })
    ));
    // Garbage, and a copy cut short: each names the file.
    let whole = std::fs::read(model_dir().join("model.safetensors")).unwrap();
    for (broken, why) in [
        (&b"not weights"[..], "safetensors header"),
        (&whole[..whole.len() - 1], "a partial copy"),
    ] {
        std::fs::write(&weights, broken).unwrap();
        let message = Model::check(dir.path()).expect_err("refused").to_string();
        assert!(
            message.contains(&weights.display().to_string()) && message.contains(why),
            "{message}"
        );
    }
}
