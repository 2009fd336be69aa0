//! Whom a trusted key vouches for, through the real binary against the loopback registry of
//! `plugin_oci`: a key trusted `--for` reference patterns signs only what matches them (at
//! install and again at every session start); an upgrade signed only by another key than the
//! installed version's is a signer change that asks like a widening; `plugin sign` says the
//! digest it signs and, given `--digest`, signs nothing when the tag moved.

use crate::agent_common::{Project, text};
use crate::plugin_lock::{preset, project, run_home, tool_list, trust_project};
use crate::plugin_oci::{
    Registry, assert_nothing_installed, assert_reads_through, http, publish_fs, read_through, run,
};
use crate::plugin_oci_signing::KeyPair;
use crate::plugin_upgrade::{component, content, greet, publish, record};

fn trust_for(project: &Project, key: &KeyPair, name: &str, patterns: &[&str]) -> String {
    let public = key.public();
    let mut args = vec!["plugin", "trust-key", name, public.to_str().unwrap()];
    for pattern in patterns {
        args.extend(["--for", pattern]);
    }
    let out = run(project, &args);
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_key_trusted_for_some_repositories_vouches_for_no_other() {
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let key = KeyPair::new();
    let acme = registry.oci("acme/fs:1.0");
    let other = registry.oci("other/fs:1.0");
    publish_fs(&publisher, &acme);
    publish_fs(&publisher, &other);
    key.sign(&publisher, &acme);
    key.sign(&publisher, &other);

    let user = Project::new(&[]);
    let scope = format!("{}/acme/*", registry.addr);
    let said = trust_for(&user, &key, "acme", &[&scope]);
    assert!(said.contains(&format!("for `{scope}`")), "{said}");
    let listed = run(&user, &["plugin", "trust-key", "--list"]);
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains("acme") && listed.contains(&key.fingerprint()) && listed.contains(&scope),
        "{listed}"
    );

    let out = run(&user, &["plugin", "install", &other]);
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains("trusted key `acme`"),
        "names the key: {shown}"
    );
    assert!(shown.contains(&scope), "names its scope: {shown}");
    assert!(
        shown.contains(&format!("not for {}/other/fs", registry.addr)),
        "names the reference: {shown}"
    );
    assert!(shown.contains("--for"), "how to widen it: {shown}");
    assert_nothing_installed(&user);

    let out = run(&user, &["plugin", "install", &acme, "--name", "acmefs"]);
    assert!(out.status.success(), "{}", text(&out));

    // Bad patterns are refused and nothing is trusted.
    let public = key.public();
    for bad in ["ghcr.io", "*/acme/fs", "ghcr.io/acme/fs:1.0"] {
        let out = run(
            &user,
            &[
                "plugin",
                "trust-key",
                "bad",
                public.to_str().unwrap(),
                "--for",
                bad,
            ],
        );
        assert!(!out.status.success(), "{bad}");
        assert!(
            text(&out).contains("is not a reference pattern"),
            "{}",
            text(&out)
        );
    }

    // A key without --for vouches for any reference, and says so.
    let anyone = Project::new(&[]);
    let said = trust_for(&anyone, &key, "acme", &[]);
    assert!(said.contains("any reference (no --for)"), "{said}");
    let out = run(&anyone, &["plugin", "install", &other, "--name", "otherfs"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_reads_through(&anyone, "otherfs");
    // Narrowed later to acme/*: the installed `other` plugin no longer loads.
    let out = run(&anyone, &["plugin", "trust-key", "--remove", "acme"]);
    assert!(out.status.success(), "{}", text(&out));
    trust_for(&anyone, &key, "acme", &[&scope]);
    let json = read_through(&anyone, "otherfs");
    let shown = json.to_string();
    assert_eq!(json["ok"], false, "{shown}");
    assert!(shown.contains("vouches only for"), "{shown}");
    assert!(shown.contains(&scope), "{shown}");
}

/// `base` published at `plugins/greeter:1.0` signed by alice and installed as `greeter` by a
/// user who trusts alice and bob; then the tag moved to `fewer` (one tool fewer: a narrowing),
/// signed by bob alone.
struct SignerChange {
    _registry: Registry,
    publisher: Project,
    alice: KeyPair,
    bob: KeyPair,
    reference: String,
    user: Project,
    fewer_bytes: Vec<u8>,
}

impl SignerChange {
    fn new() -> SignerChange {
        let registry = Registry::start();
        let publisher = Project::new(&[]);
        let (alice, bob) = (KeyPair::new(), KeyPair::new());
        let reference = registry.oci("plugins/greeter:1.0");
        let (base, _) = component("base");
        let (fewer, fewer_bytes) = component("fewer");
        publish(&publisher, &base, &reference, &alice);
        let user = Project::new(&[]);
        alice.trust(&user, "alice");
        bob.trust(&user, "bob");
        let out = run(
            &user,
            &["plugin", "install", &reference, "--name", "greeter"],
        );
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(signer(&user), "alice");
        publish(&publisher, &fewer, &reference, &bob);
        SignerChange {
            _registry: registry,
            publisher,
            alice,
            bob,
            reference,
            user,
            fewer_bytes,
        }
    }
}

fn signer(user: &Project) -> serde_json::Value {
    record(user, "greeter")["origin"]["signature"]["key"].clone()
}

#[test]
fn an_upgrade_signed_only_by_another_key_asks_before_it_is_installed() {
    let c = SignerChange::new();
    let out = run(&c.user, &["plugin", "upgrade", "greeter"]);
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!(
            "+ signer changed: key `alice` ({}) -> key `bob` ({})",
            c.alice.fingerprint(),
            c.bob.fingerprint()
        )),
        "{shown}"
    );
    assert!(shown.contains("its layer was not downloaded"), "{shown}");
    assert!(shown.contains("--accept-widening"), "{shown}");
    assert_eq!(signer(&c.user), "alice");
    assert_eq!(content(&greet(&c.user, "greeter")), "hello ada from base");

    // Signed again by alice (in bob's place): the same signer, nothing to ask.
    c.alice.sign(&c.publisher, &c.reference);
    let out = run(&c.user, &["plugin", "upgrade", "greeter"]);
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(!shown.contains("signer changed"), "{shown}");
    let upgraded = record(&c.user, "greeter");
    assert_eq!(
        upgraded["sha256"],
        crate::plugin_oci::sha256_hex(&c.fewer_bytes)
    );
    assert_eq!(signer(&c.user), "alice");
}

#[test]
fn an_accepted_signer_change_records_the_new_signer() {
    let c = SignerChange::new();
    let out = run(
        &c.user,
        &["plugin", "upgrade", "greeter", "--accept-widening"],
    );
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("+ signer changed"),
        "the diff shows it: {shown}"
    );
    assert_eq!(signer(&c.user), "bob");
    assert_eq!(content(&greet(&c.user, "greeter")), "hello ada from fewer");
}

#[test]
fn plugin_sign_says_the_digest_it_signs_and_refuses_a_tag_that_moved() {
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let key = KeyPair::new();
    let reference = registry.oci("plugins/fs:1.0");
    let first = publish_fs(&publisher, &reference);
    let private = key.private();
    let private = private.to_str().unwrap();

    // The tag moves before the signer looked: --digest names what was checked.
    let second = publish_fs(&publisher, &reference);
    assert_ne!(first, second);
    let out = run(
        &publisher,
        &[
            "plugin", "sign", &reference, "--key", private, "--digest", &first,
        ],
    );
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!("resolves to {second}, not the {first}")),
        "{shown}"
    );
    assert!(shown.contains("nothing was signed"), "{shown}");
    for digest in [&first, &second] {
        let tag = format!("{}.sig", digest.replacen(':', "-", 1));
        let (status, ..) = http(
            &registry.addr,
            "GET",
            &format!("/v2/plugins/fs/manifests/{tag}"),
            &[],
            b"",
        );
        assert_eq!(status, 404, "a signature was pushed for {digest}");
    }

    // Signed with --digest, or by tag alone: either way it says the digest first.
    for extra in [vec!["--digest", second.as_str()], vec![]] {
        let mut args = vec!["plugin", "sign", &reference, "--key", private];
        args.extend(extra);
        let out = run(&publisher, &args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            stdout.contains(&format!("signing manifest {second}")),
            "{stdout}"
        );
    }

    let out = run(
        &publisher,
        &[
            "plugin",
            "sign",
            &reference,
            "--key",
            private,
            "--digest",
            "sha256:abc",
        ],
    );
    assert!(!out.status.success());
    assert!(text(&out).contains("is not a SHA-256"), "{}", text(&out));
}

#[test]
fn install_locked_holds_a_keys_scope_from_the_registry_and_from_blobs() {
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let reference = registry.oci("plugins/fs:1.0");
    publish_fs(&publisher, &reference);
    let key = KeyPair::new();
    key.sign(&publisher, &reference);

    // A first machine installs it; a session records it in the project's lock.
    let first = project();
    key.trust(&first, "publisher");
    let out = run(
        &first,
        &["plugin", "install", &reference, "--name", "ocifs"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = tool_list(&first, &preset(&first, "ocifs"));
    assert!(out.status.success(), "{}", text(&out));

    let public = key.public();
    let trust = |home: &std::path::Path, pattern: &str| {
        let args = [
            "plugin",
            "trust-key",
            "publisher",
            public.to_str().unwrap(),
            "--for",
            pattern,
        ];
        let out = run_home(&first, home, &args);
        assert!(out.status.success(), "{}", text(&out));
    };
    let elsewhere = format!("{}/acme/*", registry.addr);

    // From the registry, with the key trusted only for acme/*: refused.
    let fresh = tempfile::tempdir().unwrap();
    trust(fresh.path(), &elsewhere);
    trust_project(&first, fresh.path());
    let out = run_home(&first, fresh.path(), &["plugin", "install", "--locked"]);
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains("vouches only for") && shown.contains(&elsewhere),
        "{shown}"
    );
    assert!(!fresh.path().join("installed/ocifs.json").exists());

    // From blobs/ (the offline re-check of the signature the lock records): refused too.
    let cached = tempfile::tempdir().unwrap();
    std::fs::create_dir(cached.path().join("blobs")).unwrap();
    let (_, fs_bytes) = crate::plugin_oci::fs_wasm();
    let blob = format!("blobs/{}.wasm", crate::plugin_oci::sha256_hex(&fs_bytes));
    std::fs::copy(first.home.path().join(&blob), cached.path().join(&blob)).unwrap();
    trust(cached.path(), &elsewhere);
    trust_project(&first, cached.path());
    drop(registry);
    let out = run_home(&first, cached.path(), &["plugin", "install", "--locked"]);
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains("vouches only for") && shown.contains(&elsewhere),
        "{shown}"
    );
    assert!(!cached.path().join("installed/ocifs.json").exists());

    // Trusted for plugins/*, the blob stands for the lock's entry.
    let out = run_home(
        &first,
        cached.path(),
        &["plugin", "trust-key", "--remove", "publisher"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let addr = reference
        .trim_start_matches("oci://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    trust(cached.path(), &format!("{addr}/plugins/*"));
    let out = run_home(&first, cached.path(), &["plugin", "install", "--locked"]);
    assert!(out.status.success(), "{}", text(&out));
}
