// text_stats: a paddock tool plugin in JavaScript, built into a component by componentize-js
// (world `tool-plugin`). Counts the lines, words and characters of a text.
// `paddock plugin new NAME --lang js` starts a project from this very file (as src/tool.js,
// the tool named after the project); its `npm run build` builds it.

const NAME = "text_stats";

const PARAMETERS = {
  type: "object",
  properties: {
    text: { type: "string", description: "The text to measure." },
  },
  required: ["text"],
  additionalProperties: false,
};

export const tools = {
  // Describe every tool; optional fields left `undefined` are "undeclared" (read conservatively).
  list() {
    return [
      {
        name: NAME,
        description:
          "Count the lines, words and characters of a text. Use it to measure text you already " +
          "have; it reads no files. Returns one line: `L lines, W words, C characters`.",
        parameters: JSON.stringify(PARAMETERS),
        examples: [{ args: '{"text": "one two"}', correct: true, note: "two words" }],
        readOnly: true,
        concurrencySafe: true,
        idempotent: true,
        cancellable: true,
        risk: "low",
        outputBudget: undefined,
        pathParams: [],
      },
    ];
  },

  // A returned value is the `ok` result; a thrown `{ code, message, retryable }` the `err`.
  call(name, args) {
    if (name !== NAME) {
      throw { code: "UNKNOWN_TOOL", message: `this plugin has no tool \`${name}\`; it has: ${NAME}`, retryable: false };
    }
    const { text } = JSON.parse(args);
    const lines = text === "" ? 0 : text.split("\n").length;
    const words = text.split(/\s+/).filter((w) => w.length > 0).length;
    const chars = [...text].length;
    return { content: `${lines} lines, ${words} words, ${chars} characters`, truncated: false, continuation: undefined };
  },
};

// Build time: componentize-js runs this file's top level once and keeps the memory it leaves
// (a snapshot); every call starts from a fresh copy of that snapshot, so nothing a call does
// reaches the next. One call here does once, in the snapshot, what each call would otherwise
// do again: parse `call`, compile its regular expression, set up JSON, string and array
// methods (about a third of a call's time). A failure here must not fail the build: the tool
// answers its real calls either way.
try {
  tools.call(NAME, JSON.stringify({ text: "warm up\nthe tool" }));
} catch (_) {
  // Not warmed up; each call does the set-up itself.
}
