#include "runtime/dashboard/dashboard_page.hpp"

namespace anchorage {
namespace {

// dashboard.html, written as bytes at build time (cmake/embed_text.cmake).
constexpr unsigned char page[] = {
#include "dashboard_html.inc"
};

}  // namespace

std::string_view dashboard_page() { return {reinterpret_cast<const char*>(page), sizeof page}; }

}  // namespace anchorage
