// Streams one Responses request through the official openai SDK (pinned in package.json) and
// prints the response the SDK's stream accumulator built, as JSON on stdout. Used by
// tests/http/test_http_responses.cpp.
//
//   node openai_sdk_responses_stream.mjs BASE_URL REQUEST_JSON_FILE
//       against a server (BASE_URL without /v1: the SDK posts to BASE_URL/v1/responses)
//   node openai_sdk_responses_stream.mjs --replay SSE_FILE REQUEST_JSON_FILE
//       against a loopback server of this script's own that answers the request with the bytes
//       of SSE_FILE (a stream the encoder wrote), so that the SDK reads streams the model of a
//       test cannot produce (function calls)
//
// Exit status 0 with {"response": ..., "output_text": ...}, or 1 with {"error": "..."}.
import fs from 'node:fs';
import http from 'node:http';
import OpenAI from 'openai';

async function finalResponse(baseURL, body) {
  const client = new OpenAI({baseURL: baseURL + '/v1', apiKey: 'sk-anchorage-test', maxRetries: 0, timeout: 120000});
  const stream = client.responses.stream(body);
  const response = await stream.finalResponse();
  return {response, output_text: response.output_text};
}

// A server that answers every request with `bytes` as an event stream; resolves to its base URL.
function replayServer(bytes) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, {'Content-Type': 'text/event-stream'});
      res.end(bytes);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const args = process.argv.slice(2);
let server = null;
try {
  let baseURL, requestFile;
  if (args[0] === '--replay') {
    server = await replayServer(fs.readFileSync(args[1]));
    baseURL = 'http://127.0.0.1:' + server.address().port;
    requestFile = args[2];
  } else {
    [baseURL, requestFile] = args;
  }
  const body = JSON.parse(fs.readFileSync(requestFile, 'utf8'));
  process.stdout.write(JSON.stringify(await finalResponse(baseURL, body)));
} catch (e) {
  process.stdout.write(JSON.stringify({error: String(e && e.stack ? e.stack : e)}));
  process.exitCode = 1;
} finally {
  if (server) server.close();
}
