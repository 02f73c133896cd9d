// Validates structured outputs with ajv (Debian's node-ajv): each line of the JSONL file given is
// {"schema": ..., "text": "..."}; the text must parse as JSON and satisfy the schema (draft 7
// with the formats ebb supports). Prints "valid N/M" and exits 1 when any is invalid.
'use strict';
const fs = require('fs');
const Ajv = require('ajv');

const ajv = new Ajv({ format: 'full', allErrors: true });
const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.length > 0);
let valid = 0;
for (const [i, line] of lines.entries()) {
  const { schema, text } = JSON.parse(line);
  let instance;
  try {
    instance = JSON.parse(text);
  } catch (e) {
    console.log(`#${i}: not JSON (${e.message}): ${text}`);
    continue;
  }
  if (ajv.validate(schema, instance)) {
    valid += 1;
  } else {
    console.log(`#${i}: ${ajv.errorsText()}: ${text} against ${JSON.stringify(schema)}`);
  }
}
console.log(`valid ${valid}/${lines.length}`);
process.exit(valid === lines.length ? 0 : 1);
