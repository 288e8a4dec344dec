#pragma once
// The dashboard page: one HTML file with its script inline (nothing fetched from elsewhere).
#include <string>

namespace grain::dashboard::detail {

const std::string& page_html();

}  // namespace grain::dashboard::detail
