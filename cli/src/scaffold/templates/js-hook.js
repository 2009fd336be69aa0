// {{name}}: a paddock hook in JavaScript, built into a component by componentize-js (world
// `configured-hook`). `preToolUse` runs before a call, `postToolUse` after it; both get the
// preset's `config` table for this hook as JSON text. `configSchema` says what that table
// accepts: paddock checks a preset against it before a session starts. Build: `npm run build`
// (see package.json).

// What this hook's `config` accepts (a JSON Schema); keep it equal to what readConfig reads.
const SCHEMA = {
  type: "object",
  properties: {
    deny_words: { type: "array", items: { type: "string" } },
    note: { type: "string" },
  },
  additionalProperties: false,
};

// The keys this hook's `config` may have; another key is a mistake in the preset, and a
// pre-hook that cannot read its config denies rather than guess.
const KEYS = Object.keys(SCHEMA.properties);

function readConfig(event) {
  const config = JSON.parse(event.config);
  const unknown = Object.keys(config).filter((key) => !KEYS.includes(key));
  if (unknown.length > 0) {
    throw new Error(
      `{{name}}: unknown config key \`${unknown[0]}\` in preset \`${event.preset}\`; ` +
        `the keys are: ${KEYS.join(", ")}`,
    );
  }
  return { denyWords: config.deny_words ?? [], note: config.note };
}

const NOTHING = { updatedInput: undefined, additionalContext: undefined };

export const hooks = {
  preToolUse(event) {
    let config;
    try {
      config = readConfig(event);
    } catch (e) {
      return { permissionDecision: { tag: "deny", val: e.message }, ...NOTHING };
    }
    const word = config.denyWords.find((w) => event.toolInput.includes(w));
    if (word !== undefined) {
      const reason =
        `{{name}}: \`${event.toolName}\` was not run because its arguments mention \`${word}\` ` +
        `(deny_words of hook {{name}} in preset \`${event.preset}\`)`;
      return { permissionDecision: { tag: "deny", val: reason }, ...NOTHING };
    }
    return { permissionDecision: { tag: "allow" }, ...NOTHING };
  },

  postToolUse(event) {
    const { note } = readConfig(event);
    return {
      replace: undefined,
      additionalContext: note === undefined ? undefined : `${note} (${event.toolName})`,
    };
  },
};

export const hookConfig = {
  configSchema() {
    return JSON.stringify(SCHEMA);
  },
};

// Build time: componentize-js runs this file's top level once and keeps the memory it leaves
// (a snapshot); every call starts from a fresh copy of it, so nothing a call does reaches the
// next. Running each hook once here parses them and sets up JSON, string and array methods in
// the snapshot, instead of in every call. A failure here must not fail the build.
try {
  const event = {
    toolName: "warm_up",
    toolInput: "{}",
    readOnly: true,
    pathParams: [],
    callId: "warm-up",
    sessionId: "warm-up",
    preset: "warm-up",
    config: "{}",
  };
  hooks.preToolUse(event);
  hooks.postToolUse({ ...event, toolResponse: { tag: "ok", val: { content: "", truncated: false, continuation: undefined } } });
  hookConfig.configSchema();
} catch (_) {
  // Not warmed up; each call does the set-up itself.
}
