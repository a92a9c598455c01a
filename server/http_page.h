// The browser page of the HTTP API (server/web/index.html, embedded at build time).
#pragma once

namespace longqa {

extern const char kHttpPage[];

}  // namespace longqa
