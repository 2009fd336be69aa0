//! A loopback OCI registry for the benches that publish and install plugins: Debian's
//! `docker-registry` (the CNCF distribution registry; `PADDOCK_OCI_REGISTRY` names another
//! binary), its storage in a temporary directory, killed when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Registry {
    child: Child,
    pub addr: String,
    _storage: tempfile::TempDir,
}

impl Registry {
    pub fn start() -> Registry {
        let binary = std::env::var_os("PADDOCK_OCI_REGISTRY")
            .filter(|p| !p.is_empty())
            .map_or_else(
                || "/usr/bin/docker-registry".into(),
                std::path::PathBuf::from,
            );
        assert!(
            binary.is_file(),
            "{} is missing: `apt-get install -y docker-registry` (`cargo xtask test` does), or \
             point PADDOCK_OCI_REGISTRY at it",
            binary.display()
        );
        let storage = tempfile::tempdir().expect("registry storage");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let config = storage.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n\
                 http:\n  addr: {addr}\n",
                storage.path().join("data").display()
            ),
        )
        .expect("registry config");
        let child = Command::new(&binary)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry");
        let registry = Registry {
            child,
            addr,
            _storage: storage,
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if registry.answers() {
                return registry;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("docker-registry did not answer on {}", registry.addr);
    }

    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(&self.addr) else {
            return false;
        };
        let request = format!(
            "GET /v2/ HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        let mut response = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut response).is_ok()
            && response.starts_with("HTTP/1.1 200")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
