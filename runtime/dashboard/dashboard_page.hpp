#pragma once
// The operator's page (docs/DASHBOARD.md): one HTML document with its style and script, built into
// the binary from runtime/dashboard/dashboard.html, served at GET / and GET /dashboard. It reads
// GET /v1/cache/stats and GET /metrics once a second and needs nothing else: no build step, no
// network beyond the server.
#include <string_view>

namespace anchorage {

// The page's bytes (UTF-8 HTML).
std::string_view dashboard_page();

}  // namespace anchorage
