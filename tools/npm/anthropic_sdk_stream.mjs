// Streams one Messages request through the official Anthropic SDK (@anthropic-ai/sdk, pinned in
// package.json) against a server and prints the message the SDK's stream accumulator built, as
// JSON on stdout. Used by tests/http/test_http_messages.cpp.
//
//   node anthropic_sdk_stream.mjs BASE_URL REQUEST_JSON_FILE
//
// Exit status 0 with {"message": ...}, or 1 with {"error": "..."}.
import fs from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';

const [baseURL, requestFile] = process.argv.slice(2);
try {
  const body = JSON.parse(fs.readFileSync(requestFile, 'utf8'));
  const client = new Anthropic({baseURL, apiKey: 'sk-anchorage-test', maxRetries: 0, timeout: 120000});
  const stream = client.messages.stream(body);
  const message = await stream.finalMessage();
  process.stdout.write(JSON.stringify({message}));
} catch (e) {
  process.stdout.write(JSON.stringify({error: String(e && e.stack ? e.stack : e)}));
  process.exitCode = 1;
}
