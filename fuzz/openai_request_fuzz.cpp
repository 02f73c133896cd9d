// Fuzzes the service's request parsing (src/server/openai_request, ollama_request): any bytes as
// the body of /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models/{id}/prefix and
// the Ollama routes (/api/generate, /api/chat, /api/embed, /api/embeddings, /api/show). A bad body
// must be an ApiException (a 400, or a 403 admin_only_option for an option only the admin may set),
// never a crash, a hang or another exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/api_error.h"
#include "server/ollama_request.h"
#include "server/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (int kind = 0; kind < 8; ++kind) {
    try {
      if (kind == 7) {
        ebb::server::ParseOllamaShow(body);
      } else if (kind == 6 || kind == 5) {
        ebb::server::ParseOllamaEmbed(body, kind == 6);
      } else if (kind == 4) {
        ebb::server::ParseOllamaGenerate(body, body.size() % 2 == 0);
      } else if (kind == 3) {
        ebb::server::ParsePrefixRequest(body);
      } else if (kind == 2) {
        ebb::server::ParseEmbeddingsRequest(body);
      } else {
        ebb::server::ParseCompletionRequest(body, kind == 0);
      }
    } catch (const ebb::server::ApiException& e) {
      const bool admin_only = e.error.status == 403 && e.error.code == "admin_only_option";
      if (e.error.status != 400 && !admin_only) __builtin_trap();
    }
  }
  return 0;
}
