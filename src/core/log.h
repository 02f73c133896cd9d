// Internal logging helpers: EBB_LOG_INFO("loaded {} in {} ms", path, ms) and friends.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace ebb::internal {

// The process-wide "ebb" logger (stderr + optional user callback). Never null.
spdlog::logger& Logger();

}  // namespace ebb::internal

#define EBB_LOG_TRACE(...) ::ebb::internal::Logger().trace(__VA_ARGS__)
#define EBB_LOG_DEBUG(...) ::ebb::internal::Logger().debug(__VA_ARGS__)
#define EBB_LOG_INFO(...) ::ebb::internal::Logger().info(__VA_ARGS__)
#define EBB_LOG_WARN(...) ::ebb::internal::Logger().warn(__VA_ARGS__)
#define EBB_LOG_ERROR(...) ::ebb::internal::Logger().error(__VA_ARGS__)
