//! Signatures of plugins installed from an OCI registry, in cosign's key-based format, through
//! the real binary against the loopback registry of `plugin_oci`. An `oci://` install needs a
//! signature of the exact manifest digest by a key the user trusts: unsigned, signed by
//! another key, signed for another digest, or with a payload or signature byte changed is
//! refused before the layer is fetched, and nothing is installed. `openssl` checks what
//! paddock signs, and paddock accepts a signature openssl made in cosign's layout.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

use crate::agent_common::{Project, text};
use crate::plugin_oci::{
    Registry, assert_nothing_installed, assert_reads_through, http, publish_fs, run, sha256_hex,
};

/// An ECDSA P-256 key pair made by openssl: `k.pem` (unencrypted PKCS#8) and `k.pub`.
pub(crate) struct KeyPair {
    dir: TempDir,
}

impl KeyPair {
    pub(crate) fn new() -> KeyPair {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("k.pem");
        let out = Command::new("openssl")
            .args(["genpkey", "-algorithm", "EC", "-pkeyopt"])
            .arg("ec_paramgen_curve:P-256")
            .arg("-out")
            .arg(&private)
            .output()
            .expect("openssl is missing: `apt-get install -y openssl` (`cargo xtask test` does)");
        assert!(out.status.success(), "{}", text(&out));
        let out = Command::new("openssl")
            .args(["pkey", "-pubout", "-in"])
            .arg(&private)
            .arg("-out")
            .arg(dir.path().join("k.pub"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        KeyPair { dir }
    }

    pub(crate) fn private(&self) -> PathBuf {
        self.dir.path().join("k.pem")
    }

    pub(crate) fn public(&self) -> PathBuf {
        self.dir.path().join("k.pub")
    }

    /// `sha256:HEX` of the DER public key, as openssl computes it.
    pub(crate) fn fingerprint(&self) -> String {
        let out = Command::new("openssl")
            .args(["pkey", "-pubin", "-outform", "DER", "-in"])
            .arg(self.public())
            .output()
            .unwrap();
        assert!(out.status.success());
        format!("sha256:{}", sha256_hex(&out.stdout))
    }

    /// `paddock plugin sign REFERENCE --key k.pem`.
    pub(crate) fn sign(&self, project: &Project, reference: &str) {
        let private = self.private();
        let out = run(
            project,
            &[
                "plugin",
                "sign",
                reference,
                "--key",
                private.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
    }

    /// `paddock plugin trust-key NAME k.pub` in `project`'s data directory.
    pub(crate) fn trust(&self, project: &Project, name: &str) {
        let public = self.public();
        let out = run(
            project,
            &["plugin", "trust-key", name, public.to_str().unwrap()],
        );
        assert!(out.status.success(), "{}", text(&out));
    }

    /// The DER signature openssl makes of `payload` with this key.
    fn openssl_sign(&self, payload: &[u8]) -> Vec<u8> {
        let file = self.dir.path().join("payload");
        std::fs::write(&file, payload).unwrap();
        let out = Command::new("openssl")
            .args(["dgst", "-sha256", "-sign"])
            .arg(self.private())
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        out.stdout
    }

    /// Whether openssl verifies `signature` (DER) over `payload` with this public key.
    fn openssl_verifies(&self, payload: &[u8], signature: &[u8]) -> bool {
        let file = self.dir.path().join("payload");
        let sig = self.dir.path().join("sig.der");
        std::fs::write(&file, payload).unwrap();
        std::fs::write(&sig, signature).unwrap();
        let out = Command::new("openssl")
            .args(["dgst", "-sha256", "-verify"])
            .arg(self.public())
            .arg("-signature")
            .arg(&sig)
            .arg(&file)
            .output()
            .unwrap();
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Verified OK")
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = ALPHABET.iter().position(|a| *a == c).expect("base64") as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

fn sig_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

fn get_manifest(registry: &Registry, repo: &str, tag: &str) -> Vec<u8> {
    let (status, head, body) = http(
        &registry.addr,
        "GET",
        &format!("/v2/{repo}/manifests/{tag}"),
        &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
        b"",
    );
    assert_eq!(status, 200, "{head}");
    body
}

fn get_blob(registry: &Registry, repo: &str, digest: &str) -> Vec<u8> {
    let (status, head, body) = http(
        &registry.addr,
        "GET",
        &format!("/v2/{repo}/blobs/{digest}"),
        &[],
        b"",
    );
    assert_eq!(status, 200, "{head}");
    body
}

/// Pushes a signature manifest in cosign's layout at `tag`: one simple-signing layer per
/// (payload, base64 signature), with a declared size possibly other than the payload's.
fn push_signature(
    registry: &Registry,
    repo: &str,
    tag: &str,
    layers: &[(Vec<u8>, String, Option<u64>)],
) {
    let config =
        br#"{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}"#;
    let config_digest = registry.push_blob(repo, config);
    let layers: Vec<Value> = layers
        .iter()
        .map(|(payload, sig, size)| {
            let digest = registry.push_blob(repo, payload);
            serde_json::json!({
                "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                "digest": digest,
                "size": size.unwrap_or(payload.len() as u64),
                "annotations": {"dev.cosignproject.cosign/signature": sig},
            })
        })
        .collect();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config.len()},
        "layers": layers,
    }))
    .unwrap();
    let status = registry.push_manifest(
        repo,
        tag,
        "application/vnd.oci.image.manifest.v1+json",
        &manifest,
    );
    assert_eq!(status, 201);
}

fn cosign_payload(docker_reference: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": {"docker-reference": docker_reference},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": null,
    }))
    .unwrap()
}

fn record(project: &Project, name: &str) -> Value {
    let path = project.home.path().join(format!("installed/{name}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn b64(bytes: &[u8]) -> String {
    crate::plugin_oci::base64(bytes)
}

#[test]
fn a_plugin_signed_by_a_trusted_key_installs_records_its_signer_and_openssl_verifies_it() {
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let reference = registry.oci("plugins/fs:1.0");
    let digest = publish_fs(&publisher, &reference);
    let key = KeyPair::new();
    key.sign(&publisher, &reference);

    let project = Project::new(&[]);
    key.trust(&project, "acme");
    let keys = project.home.path().join("trusted-keys");
    let mode = |p: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions())
            & 0o777
    };
    assert_eq!(mode(&keys), 0o700);
    assert_eq!(mode(&keys.join("acme.pem")), 0o600);
    let out = run(&project, &["plugin", "trust-key", "--list"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&key.fingerprint()),
        "the fingerprint is openssl's: {}",
        text(&out)
    );

    let out = run(&project, &["plugin", "install", &reference]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("signed by trusted key acme"),
        "{}",
        text(&out)
    );
    let signature = &record(&project, "fs")["origin"]["signature"];
    assert_eq!(signature["key"], "acme", "{signature}");
    assert_eq!(signature["fingerprint"], key.fingerprint().as_str());
    assert!(signature.get("unsigned_allowed").is_none(), "{signature}");
    assert_reads_through(&project, "fs");

    // What paddock pushed is cosign's layout, and openssl verifies its signature.
    let manifest: Value =
        serde_json::from_slice(&get_manifest(&registry, "plugins/fs", &sig_tag(&digest))).unwrap();
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    let layer = &manifest["layers"][0];
    assert_eq!(
        layer["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    let payload = get_blob(&registry, "plugins/fs", layer["digest"].as_str().unwrap());
    let parsed: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        parsed["critical"]["image"]["docker-manifest-digest"],
        digest.as_str()
    );
    assert_eq!(
        parsed["critical"]["identity"]["docker-reference"],
        format!("{}/plugins/fs", registry.addr).as_str()
    );
    assert_eq!(
        parsed["critical"]["type"],
        "cosign container image signature"
    );
    let der = base64_decode(
        layer["annotations"]["dev.cosignproject.cosign/signature"]
            .as_str()
            .unwrap(),
    );
    assert!(key.openssl_verifies(&payload, &der));
    let mut changed = payload.clone();
    changed[5] ^= 1;
    assert!(!key.openssl_verifies(&changed, &der), "openssl can refuse");
}

#[test]
fn a_signature_openssl_made_in_cosigns_layout_is_accepted() {
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let reference = registry.oci("plugins/fs:1.0");
    let digest = publish_fs(&publisher, &reference);
    let key = KeyPair::new();
    let payload = cosign_payload(&format!("{}/plugins/fs", registry.addr), &digest);
    let sig = b64(&key.openssl_sign(&payload));
    push_signature(
        &registry,
        "plugins/fs",
        &sig_tag(&digest),
        &[(payload, sig, None)],
    );
    let project = Project::new(&[]);
    key.trust(&project, "openssl-key");
    let out = run(&project, &["plugin", "install", &reference]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        record(&project, "fs")["origin"]["signature"]["key"],
        "openssl-key"
    );
}

#[test]
fn unsigned_is_refused_naming_allow_unsigned_and_with_it_installs_and_is_recorded() {
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let reference = registry.oci("plugins/fs:1.0");
    let digest = publish_fs(&publisher, &reference);
    let project = Project::new(&[]);
    KeyPair::new().trust(&project, "someone");
    let out = run(&project, &["plugin", "install", &reference]);
    assert!(!out.status.success(), "{}", text(&out));
    let shown = text(&out);
    for expect in [
        "is not signed",
        digest.as_str(),
        "--allow-unsigned",
        "trust-key",
        "nothing was installed",
    ] {
        assert!(shown.contains(expect), "{expect}: {shown}");
    }
    assert_nothing_installed(&project);

    let out = run(
        &project,
        &["plugin", "install", &reference, "--allow-unsigned"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("warning: installed without checking a signature"),
        "{}",
        text(&out)
    );
    assert_eq!(
        record(&project, "fs")["origin"]["signature"]["unsigned_allowed"],
        true
    );
}

#[test]
fn untrusted_keys_other_digests_tampered_bytes_and_oversized_payloads_are_refused() {
    let registry = Registry::start();
    let publisher = Project::new(&[]);
    let repo = "plugins/fs";
    let a = registry.oci("plugins/fs:1.0");
    let digest_a = publish_fs(&publisher, &a);
    let (path, _) = crate::plugin_oci::fs_wasm();
    let b = registry.oci("plugins/fs:2.0");
    let out = run(
        &publisher,
        &[
            "plugin",
            "publish",
            path.to_str().unwrap(),
            &b,
            "--version",
            "2.0.0",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let digest_b = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("manifest ").map(str::to_string))
        .unwrap();
    assert_ne!(digest_a, digest_b);

    let trusted = KeyPair::new();
    let stranger = KeyPair::new();
    let project = Project::new(&[]);
    trusted.trust(&project, "trusted");
    let refused = |reference: &str, expect: &[&str]| {
        let out = run(&project, &["plugin", "install", reference]);
        assert!(!out.status.success(), "{}", text(&out));
        let shown = text(&out);
        for e in expect {
            assert!(shown.contains(e), "{e}: {shown}");
        }
        assert_nothing_installed(&project);
    };

    // Signed by a key the user does not trust: the trusted key's fingerprint is named.
    stranger.sign(&publisher, &a);
    let fp = trusted.fingerprint();
    refused(
        &a,
        &["does not verify with any trusted key", &fp, "trust-key"],
    );

    // A trusted signature of A copied to B's signature tag.
    trusted.sign(&publisher, &a);
    let sig_a = get_manifest(&registry, repo, &sig_tag(&digest_a));
    assert_eq!(
        registry.push_manifest(
            repo,
            &sig_tag(&digest_b),
            "application/vnd.oci.image.manifest.v1+json",
            &sig_a
        ),
        201
    );
    refused(&b, &["another artifact", &digest_a, &digest_b]);

    // A's own signature with one byte of the payload, or of the signature, changed.
    let docker_reference = format!("{}/{repo}", registry.addr);
    let payload = cosign_payload(&docker_reference, &digest_a);
    let der = trusted.openssl_sign(&payload);
    let mut bad_payload = payload.clone();
    let at = bad_payload.len() - 3;
    bad_payload[at] ^= 0x20;
    push_signature(
        &registry,
        repo,
        &sig_tag(&digest_a),
        &[(bad_payload, b64(&der), None)],
    );
    refused(&a, &["does not verify with any trusted key"]);
    let mut bad_der = der.clone();
    let last = bad_der.len() - 1;
    bad_der[last] ^= 1;
    push_signature(
        &registry,
        repo,
        &sig_tag(&digest_a),
        &[(payload.clone(), b64(&bad_der), None)],
    );
    refused(&a, &["signature 1:"]);

    // A payload declared larger than a payload may be, and too many signature layers.
    push_signature(
        &registry,
        repo,
        &sig_tag(&digest_a),
        &[(payload.clone(), b64(&der), Some(1 << 30))],
    );
    refused(&a, &["over the 65536"]);
    let many: Vec<_> = (0..40)
        .map(|_| (payload.clone(), b64(&der), None))
        .collect();
    push_signature(&registry, repo, &sig_tag(&digest_a), &many);
    refused(&a, &["40 signature layers"]);

    // The good signature among a bad one still counts.
    push_signature(
        &registry,
        repo,
        &sig_tag(&digest_a),
        &[
            (payload.clone(), b64(&bad_der), None),
            (payload, b64(&der), None),
        ],
    );
    let out = run(&project, &["plugin", "install", &a]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn trust_key_refuses_what_is_not_a_p256_public_key_and_lists_and_removes() {
    let project = Project::new(&[("garbage.pub", "not a key\n")]);
    let garbage = project.dir.path().join("garbage.pub");
    let out = run(
        &project,
        &["plugin", "trust-key", "g", garbage.to_str().unwrap()],
    );
    assert!(!out.status.success());
    let shown = text(&out);
    assert!(
        shown.contains("BEGIN PUBLIC KEY") && shown.contains("no key was added"),
        "{shown}"
    );
    let out = run(&project, &["plugin", "trust-key", "z", "/dev/zero"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("over 16384 bytes"), "{}", text(&out));
    let key = KeyPair::new();
    let out = run(
        &project,
        &["plugin", "trust-key", "p", key.private().to_str().unwrap()],
    );
    assert!(
        !out.status.success(),
        "a private key is not a public key: {}",
        text(&out)
    );
    let broken = project.dir.path().join("broken.pub");
    let pem = std::fs::read_to_string(key.public()).unwrap();
    std::fs::write(&broken, pem.replacen("MFkw", "MFkx", 1)).unwrap();
    let out = run(
        &project,
        &["plugin", "trust-key", "b", broken.to_str().unwrap()],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("not an ECDSA P-256 public key"),
        "{}",
        text(&out)
    );

    key.trust(&project, "k1");
    let out = run(
        &project,
        &["plugin", "trust-key", "k1", key.public().to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(text(&out).contains("already trusted"), "{}", text(&out));
    let out = run(&project, &["plugin", "trust-key", "--remove", "k1"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&project, &["plugin", "trust-key", "--list"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no trusted keys"),
        "{}",
        text(&out)
    );
}

#[test]
fn publish_with_a_sign_key_signs_what_it_pushes_and_a_bad_key_pushes_nothing() {
    let registry = Registry::start();
    let publisher = Project::new(&[(
        "bad.pem",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )]);
    let (path, _) = crate::plugin_oci::fs_wasm();
    let wasm = path.to_str().unwrap();
    let bad = publisher.dir.path().join("bad.pem");
    let reference = registry.oci("signed/fs:1.0");
    let out = run(
        &publisher,
        &[
            "plugin",
            "publish",
            wasm,
            &reference,
            "--sign-key",
            bad.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("PKCS#8") && text(&out).contains("nothing was published"),
        "{}",
        text(&out)
    );
    let (status, head, _) = http(&registry.addr, "GET", "/v2/signed/fs/tags/list", &[], b"");
    assert_eq!(status, 404, "nothing was pushed: {head}");

    let key = KeyPair::new();
    let out = run(
        &publisher,
        &[
            "plugin",
            "publish",
            wasm,
            &reference,
            "--sign-key",
            key.private().to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("signed with key {}", key.fingerprint())),
        "{}",
        text(&out)
    );
    let project = Project::new(&[]);
    key.trust(&project, "publisher");
    let out = run(&project, &["plugin", "install", &reference]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(&project, &["plugin", "inspect", "fs"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!(
            "signed by trusted key publisher ({})",
            key.fingerprint()
        )),
        "{}",
        text(&out)
    );
}
