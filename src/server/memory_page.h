// The live memory page of `ebb serve` at GET / (docs/http_api.md#the-memory-page-get-).
//
// One self-contained HTML document (inline CSS and JS; no CDN, no fonts, nothing fetched but
// the service's own API) embedded in the binary. In the browser it polls GET /v1/runtime every
// second, keeps the last 5 minutes of samples and draws them as SVG line charts: the process
// (RSS, anonymous/file split) and each loaded model (KV in use/reserved, arena in use/allocated,
// weights; for a model on a device, its KV there and what gpu_mem_limit counts), with requests/s
// and tokens/s derived from /v1/runtime's cumulative counters. A model on a device also shows its
// device line (ModelSummary::device: device, adapter, KV, used/limit, ORT's cache and its mode,
// the NVIDIA driver's figures), hidden for a model on the CPU. Per model it has buttons for
// shrink now, shrink after the next run and unload.
//
// Contract for tests and scrapers: every figure is text in the DOM, formatted in MiB (counts and
// rates as plain numbers), on an element with data-field (and data-model="ID" for a model's
// figures, data-scope="process" for the process's) and the raw value in data-value; the card of
// a model is [data-model-card="ID"]; #samples counts the polls that succeeded.
//
// Authentication: the page itself is served without a key (it holds no data); its API calls
// carry `Authorization: Bearer KEY`, with the key asked once and kept in localStorage.
#pragma once

#include <string_view>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ebb::server {

// The whole document (UTF-8 HTML).
std::string_view MemoryPageHtml();

// GET /: answers the page with no-store caching and a Content-Security-Policy that allows nothing
// but the page's inline code and requests to its own origin.
void ServeMemoryPage(const httplib::Request& req, httplib::Response& res);

}  // namespace ebb::server
