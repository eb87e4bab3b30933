#include <canopy/app/gl.hpp>

#include <canopy/core/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace canopy::app {

namespace {
const char* gl_error_name(GLenum e) {
  switch (e) {
    case GL_INVALID_ENUM: return "GL_INVALID_ENUM";
    case GL_INVALID_VALUE: return "GL_INVALID_VALUE";
    case GL_INVALID_OPERATION: return "GL_INVALID_OPERATION";
    case GL_OUT_OF_MEMORY: return "GL_OUT_OF_MEMORY";
    case GL_INVALID_FRAMEBUFFER_OPERATION: return "GL_INVALID_FRAMEBUFFER_OPERATION";
    default: return "unknown GL error";
  }
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw error("canopy::app::load_program: cannot open shader '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `defines` goes right after the source's first line (its #version).
GLuint compile(GLenum type, const std::string& path, const std::string& defines) {
  std::string text = read_text(path);
  if (!defines.empty()) {
    const std::size_t eol = text.find('\n');
    require(eol != std::string::npos && text.compare(0, 8, "#version") == 0, "canopy::app::load_program", "defines",
            "need a shader whose first line is its #version; " + path + " has none");
    text.insert(eol + 1, defines);
  }
  const char* src = text.c_str();
  const GLuint s = glCreateShader(type);
  glShaderSource(s, 1, &src, nullptr);
  glCompileShader(s);
  GLint ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    GLint len = 0;
    glGetShaderiv(s, GL_INFO_LOG_LENGTH, &len);
    std::string log(std::size_t(len > 0 ? len : 1), '\0');
    glGetShaderInfoLog(s, len, nullptr, log.data());
    glDeleteShader(s);
    throw error("canopy::app::load_program: " + path + " failed to compile:\n" + log);
  }
  return s;
}
}  // namespace

void gl_check(const char* where) {
  const GLenum e = glGetError();
  if (e != GL_NO_ERROR) throw error(std::string(where) + ": " + gl_error_name(e));
}

namespace detail {
void delete_buffer(GLuint id) { glDeleteBuffers(1, &id); }
void delete_texture(GLuint id) { glDeleteTextures(1, &id); }
void delete_vertex_array(GLuint id) { glDeleteVertexArrays(1, &id); }
void delete_framebuffer(GLuint id) { glDeleteFramebuffers(1, &id); }
void delete_program(GLuint id) { glDeleteProgram(id); }
void delete_query(GLuint id) { glDeleteQueries(1, &id); }
}  // namespace detail

gl_buffer make_buffer(std::size_t bytes, const void* data) {
  GLuint id = 0;
  glCreateBuffers(1, &id);
  glNamedBufferData(id, GLsizeiptr(bytes), data, GL_DYNAMIC_DRAW);
  gl_check("canopy::app::make_buffer");
  return gl_buffer(id);
}

gl_texture make_texture_2d(GLenum format, int width, int height) {
  GLuint id = 0;
  glCreateTextures(GL_TEXTURE_2D, 1, &id);
  glTextureStorage2D(id, 1, format, width, height);
  glTextureParameteri(id, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTextureParameteri(id, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTextureParameteri(id, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTextureParameteri(id, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  gl_check("canopy::app::make_texture_2d");
  return gl_texture(id);
}

std::string shader_dir() {
  if (const char* env = std::getenv("CANOPY_SHADER_DIR"); env && *env) return env;
#ifdef CANOPY_SHADER_SOURCE_DIR
  if (is_dir(CANOPY_SHADER_SOURCE_DIR)) return CANOPY_SHADER_SOURCE_DIR;
#endif
#ifdef CANOPY_SHADER_INSTALL_DIR
  if (is_dir(CANOPY_SHADER_INSTALL_DIR)) return CANOPY_SHADER_INSTALL_DIR;
#endif
  throw error("canopy::app::shader_dir: no shader folder found; set CANOPY_SHADER_DIR");
}

gl_program load_program(const std::string& vertex_file, const std::string& fragment_file, const std::string& defines) {
  const std::string dir = shader_dir();
  const GLuint vs = compile(GL_VERTEX_SHADER, dir + "/" + vertex_file, defines);
  GLuint fs = 0;
  try {
    fs = compile(GL_FRAGMENT_SHADER, dir + "/" + fragment_file, defines);
  } catch (...) {
    glDeleteShader(vs);
    throw;
  }
  const GLuint p = glCreateProgram();
  glAttachShader(p, vs);
  glAttachShader(p, fs);
  glLinkProgram(p);
  glDeleteShader(vs);
  glDeleteShader(fs);
  GLint ok = 0;
  glGetProgramiv(p, GL_LINK_STATUS, &ok);
  if (!ok) {
    GLint len = 0;
    glGetProgramiv(p, GL_INFO_LOG_LENGTH, &len);
    std::string log(std::size_t(len > 0 ? len : 1), '\0');
    glGetProgramInfoLog(p, len, nullptr, log.data());
    glDeleteProgram(p);
    throw error("canopy::app::load_program: " + vertex_file + " + " + fragment_file + " failed to link:\n" + log);
  }
  return gl_program(p);
}

GLint uniform(const gl_program& p, const char* name) { return glGetUniformLocation(p.get(), name); }

void render_target::resize(int width, int height, bool depth_copy) {
  require(width > 0 && height > 0, "canopy::app::render_target::resize", "width/height", "must be positive");
  if (width == width_ && height == height_ && depth_copy == bool(depth_copy_) && fbo_) return;
  color_ = make_texture_2d(GL_RGBA8, width, height);
  depth_ = make_texture_2d(GL_DEPTH_COMPONENT32F, width, height);
  glTextureParameteri(depth_.get(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTextureParameteri(depth_.get(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  depth_copy_.reset();
  if (depth_copy) {
    depth_copy_ = make_texture_2d(GL_R32F, width, height);
    glTextureParameteri(depth_copy_.get(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTextureParameteri(depth_copy_.get(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  }
  ++generation_;
  GLuint fbo = 0;
  glCreateFramebuffers(1, &fbo);
  fbo_ = gl_framebuffer(fbo);
  glNamedFramebufferTexture(fbo, GL_COLOR_ATTACHMENT0, color_.get(), 0);
  glNamedFramebufferTexture(fbo, GL_DEPTH_ATTACHMENT, depth_.get(), 0);
  if (depth_copy) {
    glNamedFramebufferTexture(fbo, GL_COLOR_ATTACHMENT1, depth_copy_.get(), 0);
    const GLenum draw[2] = {GL_COLOR_ATTACHMENT0, GL_COLOR_ATTACHMENT1};
    glNamedFramebufferDrawBuffers(fbo, 2, draw);
  }
  const GLenum status = glCheckNamedFramebufferStatus(fbo, GL_FRAMEBUFFER);
  if (status != GL_FRAMEBUFFER_COMPLETE)
    throw error("canopy::app::render_target::resize: framebuffer incomplete (status " + std::to_string(status) + ")");
  width_ = width;
  height_ = height;
  gl_check("canopy::app::render_target::resize");
}

void render_target::bind() const {
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_.get());
  glViewport(0, 0, width_, height_);
}

void render_target::clear(float r, float g, float b, float a) const {
  const GLfloat colour[4] = {r, g, b, a};
  const GLfloat far[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  glClearNamedFramebufferfv(fbo_.get(), GL_COLOR, 0, colour);
  if (depth_copy_) glClearNamedFramebufferfv(fbo_.get(), GL_COLOR, 1, far);
  glClearNamedFramebufferfv(fbo_.get(), GL_DEPTH, 0, far);
  gl_check("canopy::app::render_target::clear");
}

void render_target::blit_to(GLuint draw_fbo, int x, int y, int w, int h) const {
  glBlitNamedFramebuffer(fbo_.get(), draw_fbo, 0, 0, width_, height_, x, y, x + w, y + h, GL_COLOR_BUFFER_BIT,
                         GL_LINEAR);
}

std::vector<std::uint8_t> render_target::read_rgba() const {
  std::vector<std::uint8_t> rows(std::size_t(width_) * height_ * 4);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo_.get());
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, rows.data());
  gl_check("canopy::app::render_target::read_rgba");
  // GL's rows run bottom to top; images are stored top to bottom.
  std::vector<std::uint8_t> out(rows.size());
  const std::size_t pitch = std::size_t(width_) * 4;
  for (int y = 0; y < height_; ++y)
    std::copy_n(rows.data() + std::size_t(height_ - 1 - y) * pitch, pitch, out.data() + std::size_t(y) * pitch);
  return out;
}

std::vector<float> render_target::read_depth() const {
  std::vector<float> rows(std::size_t(width_) * height_);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo_.get());
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  glReadPixels(0, 0, width_, height_, GL_DEPTH_COMPONENT, GL_FLOAT, rows.data());
  gl_check("canopy::app::render_target::read_depth");
  std::vector<float> out(rows.size());
  for (int y = 0; y < height_; ++y)
    std::copy_n(rows.data() + std::size_t(height_ - 1 - y) * width_, width_, out.data() + std::size_t(y) * width_);
  return out;
}

gpu_timer::gpu_timer() { glGenQueries(kLatency, queries_.data()); }
gpu_timer::~gpu_timer() { glDeleteQueries(kLatency, queries_.data()); }

void gpu_timer::begin() {
  // The slot about to be reused: collect it if its result arrived, otherwise drop it rather than wait.
  if (pending_[next_]) {
    GLint available = 0;
    glGetQueryObjectiv(queries_[next_], GL_QUERY_RESULT_AVAILABLE, &available);
    if (available) {
      GLuint64 ns = 0;
      glGetQueryObjectui64v(queries_[next_], GL_QUERY_RESULT, &ns);
      latest_ms_ = double(ns) * 1e-6;
    }
    pending_[next_] = false;
  }
  glBeginQuery(GL_TIME_ELAPSED, queries_[next_]);
}

void gpu_timer::end() {
  glEndQuery(GL_TIME_ELAPSED);
  pending_[next_] = true;
  next_ = (next_ + 1) % kLatency;
}

double gpu_timer::latest_ms() {
  // Newest completed first: walk back from the most recently ended query.
  for (int k = 1; k <= kLatency; ++k) {
    const int i = (next_ - k + kLatency) % kLatency;
    if (!pending_[i]) continue;
    GLint available = 0;
    glGetQueryObjectiv(queries_[i], GL_QUERY_RESULT_AVAILABLE, &available);
    if (!available) continue;
    GLuint64 ns = 0;
    glGetQueryObjectui64v(queries_[i], GL_QUERY_RESULT, &ns);
    latest_ms_ = double(ns) * 1e-6;
    // Older pending queries are superseded by this one.
    for (int j = k; j <= kLatency; ++j) pending_[(next_ - j + kLatency) % kLatency] = false;
    break;
  }
  return latest_ms_;
}

double gpu_timer::wait_ms() {
  const int i = (next_ - 1 + kLatency) % kLatency;
  if (!pending_[i]) return latest_ms_;
  GLuint64 ns = 0;
  glGetQueryObjectui64v(queries_[i], GL_QUERY_RESULT, &ns);  // blocks until available
  latest_ms_ = double(ns) * 1e-6;
  for (int j = 0; j < kLatency; ++j) pending_[j] = false;
  return latest_ms_;
}

}  // namespace canopy::app
