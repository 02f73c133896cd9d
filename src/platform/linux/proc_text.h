// platform/linux/proc_text: reading the kernel's small text files (/proc, /sys, cgroup files) and
// pure parsers of /proc's text formats, used by the Linux implementation of the platform seam; the
// parsers are tested on made-up text (tests/unit/platform_system_test.cpp). Not part of the
// seam's interface: a port to another system does not implement these.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::platform::linux_text {

// The whole text of a small kernel file (read at once: /proc files are generated on read);
// nullopt when it cannot be opened.
std::optional<std::string> ReadKernelText(const std::filesystem::path& path);

// The words of the first "flags" (x86-64) or "Features" (Arm) line of /proc/cpuinfo text; empty
// when there is none.
std::set<std::string> ParseCpuFlags(std::string_view cpuinfo);

// The value of the first "model name" line of /proc/cpuinfo text (leading blanks dropped);
// nullopt when there is none or it has no ':'.
std::optional<std::string> ParseCpuModelName(std::string_view cpuinfo);

// Field 22 (starttime, clock ticks after boot) of /proc/PID/stat text; nullopt when the text is
// not a stat line or the process is a zombie ("Z") or dead ("X"): it has exited. The command name
// (field 2) may hold spaces and parentheses: the last ')' ends it.
std::optional<uint64_t> ParseStatStartTime(std::string_view stat);

// The NUL-separated strings of /proc/PID/cmdline text (a trailing NUL ends the last one).
std::vector<std::string> SplitNulSeparated(std::string_view raw);

// The socket inodes of listening sockets (state 0A) on `port` in /proc/net/tcp or tcp6 text.
// Columns: sl local_address(hex ip:hex port) rem_address st ... uid timeout inode; the first line
// is a header.
std::vector<std::string> ListeningInodes(std::string_view table, int port);

}  // namespace ebb::platform::linux_text
