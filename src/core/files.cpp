#include "core/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace shardwise {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

// write(2) until every byte is out; false with errno set on failure
bool write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

Error write_error(const std::string& path, const std::string& label, const std::string& what) {
  return Error{path, "", label.empty() ? "a writable file" : "a writable file for " + label, what};
}

}  // namespace

std::optional<Error> write_file_whole(const std::string& path, std::string_view text, const std::string& label) {
  if (path.empty()) return Error{label.empty() ? "output" : label, "", "a file name", "an empty one"};
  // the file the path names (a symbolic link is followed, so the link itself stays)
  std::error_code ec;
  std::filesystem::path target = std::filesystem::path(path);
  if (std::filesystem::is_symlink(target, ec)) {
    const auto resolved = std::filesystem::weakly_canonical(target, ec);
    if (!ec) target = resolved;
  }
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return write_error(path, label, "a directory");
  if (exists && !S_ISREG(st.st_mode)) {
    // a device, FIFO or terminal: written in place (it cannot be replaced), every write checked;
    // O_NONBLOCK so that a FIFO nobody reads is an error, not a hang
    const int fd = ::open(target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return write_error(path, label, errno == ENXIO ? "a FIFO that nobody reads" : errno_text(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const bool ok = write_all(fd, text);
    const int err = errno;
    if (::close(fd) != 0 && ok) return write_error(path, label, errno_text(errno));
    if (!ok) return write_error(path, label, errno_text(err));
    return std::nullopt;
  }
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return write_error(path, label, "cannot create a file in " + dir.string() + " (" + errno_text(errno) + ")");
  // the new file keeps the old one's permissions, else the usual 0666 less the umask
  mode_t mode = 0;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd, mode);
  bool ok = write_all(fd, text) && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmpl.c_str(), target.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmpl.c_str());
    return write_error(path, label, errno_text(err) + "; the previous file, if any, is unchanged");
  }
  return std::nullopt;
}

std::optional<Error> distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  const auto key = [](const std::string& p) {
    std::error_code ec;
    const auto c = std::filesystem::weakly_canonical(std::filesystem::path(p), ec);
    return ec ? std::filesystem::absolute(p, ec).lexically_normal().string() : c.string();
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].second.empty()) continue;
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (outputs[j].second.empty()) continue;
      std::error_code ec;
      const bool same = key(outputs[i].second) == key(outputs[j].second) ||
                        std::filesystem::equivalent(outputs[i].second, outputs[j].second, ec);
      if (same) {
        return Error{outputs[j].first, "", "a file other than " + outputs[i].first + "'s (one would overwrite the other)",
                     "'" + outputs[j].second + "'"};
      }
    }
  }
  return std::nullopt;
}

std::optional<Error> flush_stdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int e = errno;
    std::clearerr(stdout);
    return Error{"standard output", "", "a writable stream", e ? errno_text(e) : std::string("a write error")};
  }
  return std::nullopt;
}

}  // namespace shardwise
