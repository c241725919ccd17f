"""Connect to the n8n instance an env file names, with the key from the environment."""

from __future__ import annotations

import os

from n8n_lockkit.errors import LockkitError
from n8n_lockkit.remote.n8n_client import N8nClient
from n8n_lockkit.workspace.envconfig import EnvFile


def api_key(env: EnvFile) -> str:
    variable = str(env.data["n8n"]["apiKeyEnv"])
    key = os.environ.get(variable, "").strip()
    if not key:
        raise LockkitError(
            f"the environment variable {variable} is not set (envs/{env.name}.yml names it in "
            "n8n.apiKeyEnv)",
            hint=f"export {variable}=<an API key from n8n: Settings → n8n API>",
        )
    return key


def client_for(env: EnvFile) -> N8nClient:
    return N8nClient(str(env.data["n8n"]["url"]), api_key(env))
