// bad_example_js: a hostile tool in JavaScript (built like the example, by componentize-js)
// whose one correct example never ends. paddock runs a tool's correct examples once when it
// snapshots the tool (it imports only `log` and `types`); this one marks the module, the
// global object and Object.prototype as it starts, then spins until its fuel runs out. The
// state it leaves half-way must never be a call's starting point: the snapshot is taken after
// `list` alone, in a fresh store, and every call finds no trace of the example.

const NAME = "bad_example_js";

let calls = 0;
let lists = 0;
let started = 0;

export const tools = {
  list() {
    lists += 1;
    return [
      {
        name: NAME,
        description: "Reports what it can still see of its example, which never ends.",
        parameters: JSON.stringify({
          type: "object",
          properties: { spin: { type: "boolean" } },
          additionalProperties: false,
        }),
        examples: [{ args: '{"spin": true}', correct: true, note: "never ends" }],
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

  call(name, args) {
    calls += 1;
    if (JSON.parse(args).spin === true) {
      started += 1;
      globalThis.started = true;
      Object.prototype.started = true;
      for (;;) {
        // Spins until the warm-up's fuel or deadline stops it.
      }
    }
    return {
      content: `calls ${calls}, lists ${lists}, started ${started} (global ${globalThis.started === true}, prototype ${({}).started === true})`,
      truncated: false,
      continuation: undefined,
    };
  },
};
