#pragma once
// The dashboard page, src/page.html: plots drawn on canvases by a small inline script that polls
// /data.json every 200 ms. Nothing is loaded from elsewhere (no CDN): the page works without a
// network. CMake embeds the file into the library at build time (page_html.cpp.in), so the
// page is edited as HTML and the program needs no file beside it.
#include <string>

namespace grain::dashboard::detail {

const std::string& page_html();

}  // namespace grain::dashboard::detail
