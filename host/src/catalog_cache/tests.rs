use std::{
    fs,
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use super::*;

/// A library file whose times are old enough to trust.
fn settled_library(dir: &Path) -> PathBuf {
    let library = dir.join("libmine.so");
    fs::write(&library, b"not really a library").unwrap();
    let old = SystemTime::now() - Duration::from_secs(60);
    File::options()
        .write(true)
        .open(&library)
        .unwrap()
        .set_modified(old)
        .unwrap();
    library
}

/// A cache whose library's change time (set by the kernel, not by us) is
/// already old enough: the test waits out [`SETTLED`] once.
fn cache_and_key(dir: &Path) -> (CatalogCache, Key) {
    let cache = CatalogCache::at(&dir.join("catalogs")).expect("a private folder");
    let library = settled_library(dir);
    let key = loop {
        match cache.key("mine", &library, &["{}", "{}"]) {
            Some(key) => break key,
            None => std::thread::sleep(SETTLED),
        }
    };
    (cache, key)
}

#[test]
fn an_entry_comes_back_under_the_same_key_and_not_under_another() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, key) = cache_and_key(dir.path());
    assert_eq!(cache.get(&key), None);
    cache.put(&key, r#"{"name":"mine"}"#);
    assert_eq!(cache.get(&key).as_deref(), Some(r#"{"name":"mine"}"#));
    let library = dir.path().join("libmine.so");
    let other_config = cache.key("mine", &library, &[r#"{"x":1}"#, "{}"]).unwrap();
    assert_ne!(other_config, key);
    assert_eq!(cache.get(&other_config), None);
    let other_pack = cache.key("yours", &library, &["{}", "{}"]).unwrap();
    assert_ne!(other_pack, key);
    cache.forget(&key);
    assert_eq!(cache.get(&key), None);
}

#[test]
fn a_library_changed_moments_ago_gives_no_key_and_a_changed_one_another_key() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, key) = cache_and_key(dir.path());
    let library = dir.path().join("libmine.so");
    fs::write(&library, b"rebuilt, same size!").unwrap();
    assert_eq!(cache.key("mine", &library, &["{}", "{}"]), None);
    let rebuilt = loop {
        match cache.key("mine", &library, &["{}", "{}"]) {
            Some(key) => break key,
            None => std::thread::sleep(SETTLED),
        }
    };
    assert_ne!(rebuilt, key);
}

#[test]
fn an_entry_others_may_write_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, key) = cache_and_key(dir.path());
    cache.put(&key, "{}");
    for mode in [0o620, 0o602] {
        fs::set_permissions(cache.path(&key), fs::Permissions::from_mode(mode)).unwrap();
        assert_eq!(cache.get(&key), None, "mode {mode:o}");
    }
    fs::set_permissions(cache.path(&key), fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(cache.get(&key).as_deref(), Some("{}"));
}

#[test]
fn an_entry_of_another_user_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, key) = cache_and_key(dir.path());
    cache.put(&key, "{}");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        // Only root can give a file away; as anyone else the entry is ours.
        eprintln!("skipped: giving a file to another user needs root");
        return;
    }
    std::os::unix::fs::chown(cache.path(&key), Some(65534), None).unwrap();
    assert_eq!(cache.get(&key), None);
}

#[test]
fn a_link_in_place_of_an_entry_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, key) = cache_and_key(dir.path());
    let planted = dir.path().join("planted.json");
    fs::write(&planted, "{}").unwrap();
    std::os::unix::fs::symlink(&planted, cache.path(&key)).unwrap();
    assert_eq!(cache.get(&key), None);
}

#[test]
fn a_folder_others_may_write_or_a_link_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    assert!(CatalogCache::at(&open).is_none());
    let link = dir.path().join("link");
    let private = dir.path().join("private");
    fs::create_dir(&private).unwrap();
    std::os::unix::fs::symlink(&private, &link).unwrap();
    assert!(CatalogCache::at(&link).is_none());
    let made = dir.path().join("made");
    assert!(CatalogCache::at(&made).is_some());
    let mode = fs::metadata(&made).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn the_oldest_entries_go_past_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, _) = cache_and_key(dir.path());
    let old = SystemTime::now() - Duration::from_secs(3600);
    for i in 0..MAX_ENTRIES {
        let key = Key(format!("old{i}"));
        cache.put(&key, "{}");
        File::options()
            .write(true)
            .open(cache.path(&key))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let newest = Key("newest".to_owned());
    cache.put(&newest, "{}");
    let entries = fs::read_dir(&cache.dir).unwrap().count();
    assert_eq!(entries, MAX_ENTRIES);
    assert_eq!(cache.get(&newest).as_deref(), Some("{}"));
}
