// The profile as data: one JSON report (schema "aspen.profile/1", docs/profiling.md) made from
// an engine's ProfileSources, and the two views derived from that report alone: a Chrome trace
// (the Trace Event Format that Perfetto and chrome://tracing load) and a self-contained HTML
// page (engine/report/ProfilePage.html with the report embedded; nothing fetched).
//
// printProfileSummary writes them with option aspen.format = json, trace or html; engine option
// autoReport.* writes them as files (profile.json, trace.json, report.html) into
// autoReport.directory; aspen-plan writes them with --json, --trace and --html.
#pragma once

#include "Profile.hpp"
#include "support/Json.hpp"

#include <string>

namespace aspen::detail {

// `context`, when not null, is copied into the report as its "context" member (aspen-plan puts
// the layer and its plan there). Raises invalid_option when the context is not a JSON object.
support::json::Value profileReport(const ProfileSources &sources,
                                   const std::string &contextJson = "");

std::string chromeTrace(const support::json::Value &report);
std::string htmlReport(const support::json::Value &report);

// Writes profile.json, trace.json and report.html into `directory` (created when needed);
// raises invalid_option naming autoReport.directory and the system's reason when it cannot.
void writeReportFiles(const support::json::Value &report, const std::string &directory);

} // namespace aspen::detail
