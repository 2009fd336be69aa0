//! Credentials for a registry: a bearer token from the environment variable the user named,
//! else what the standard docker configuration holds for that
//! registry (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`, its `auths` and its
//! credential helpers), else none. Credentials are never written anywhere by paddock.

use oci_client::secrets::RegistryAuth;

use crate::plugin_store::remote::RemoteError;

/// How to authenticate, as the user asked.
#[derive(Debug, Clone, Default)]
pub struct AuthChoice {
    /// The name of an environment variable holding a bearer token.
    pub token_env: Option<String>,
}

impl AuthChoice {
    /// The credentials for `registry` (`HOST[:PORT]`).
    pub fn resolve(&self, registry: &str) -> Result<RegistryAuth, RemoteError> {
        if let Some(var) = &self.token_env {
            return match std::env::var(var) {
                Ok(token) if !token.trim().is_empty() => {
                    Ok(RegistryAuth::Bearer(token.trim().to_string()))
                }
                _ => Err(RemoteError::TokenUnset { var: var.clone() }),
            };
        }
        from_docker_config(registry)
    }
}

/// Where docker keeps its configuration (`$DOCKER_CONFIG`, else `~/.docker`).
fn docker_config_file() -> Option<std::path::PathBuf> {
    std::env::var_os("DOCKER_CONFIG")
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| dirs::home_dir().map(|home| home.join(".docker")))
        .map(|dir| dir.join("config.json"))
}

fn from_docker_config(registry: &str) -> Result<RegistryAuth, RemoteError> {
    use docker_credential::{CredentialRetrievalError as E, DockerCredential};
    // No configuration at all is the anonymous case; one that cannot be read is an error.
    if !docker_config_file().is_some_and(|file| file.exists()) {
        return Ok(RegistryAuth::Anonymous);
    }
    match docker_credential::get_credential(registry) {
        Ok(DockerCredential::UsernamePassword(user, password)) => {
            Ok(RegistryAuth::Basic(user, password))
        }
        Ok(DockerCredential::IdentityToken(_)) => Err(RemoteError::IdentityToken {
            registry: registry.to_string(),
        }),
        Err(E::ConfigNotFound | E::NoCredentialConfigured) => Ok(RegistryAuth::Anonymous),
        // A helper that holds nothing for this registry says so and fails; docker goes on
        // anonymously, and so does paddock.
        Err(E::HelperFailure { stdout, stderr, .. })
            if format!("{stdout}{stderr}").contains("credentials not found") =>
        {
            Ok(RegistryAuth::Anonymous)
        }
        Err(e) => Err(RemoteError::DockerCredentials {
            registry: registry.to_string(),
            why: e.to_string(),
        }),
    }
}
