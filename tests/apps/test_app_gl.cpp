// The app framework's pieces that need a GL context, in a headless one (Mesa llvmpipe in CI, the
// NVIDIA EGL device on the GPU machine): render_target's depth copy against the depth buffer,
// texture_reader against GL's own read-back on both backends (CUDA through interop), the reader's
// refusals, and load_program's defines. Cuda* cases skip, saying why, without a usable device.
#include <gtest/gtest.h>

#include <canopy/app/gl.hpp>
#include <canopy/app/interop.hpp>
#include <canopy/app/options.hpp>
#include <canopy/app/platform.hpp>
#include <canopy/app/renderers.hpp>
#include <canopy/core/buffer.hpp>
#include <canopy/core/context.hpp>
#include <canopy/core/error.hpp>

#include <glm/gtc/matrix_transform.hpp>

#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace app = canopy::app;

// One headless GL context for the whole program (EGL contexts are costly to make), destroyed when
// the tests end: left to static destruction, it outlived NVIDIA's EGL driver at exit and the
// process crashed (signal 11 after every test had passed, on the H200).
std::unique_ptr<app::platform>& gl_platform() {
  static std::unique_ptr<app::platform> p;
  return p;
}
app::platform& gl() {
  std::unique_ptr<app::platform>& p = gl_platform();
  if (!p) {
    app::app_options o;
    o.headless = true;
    o.width = 64;
    o.height = 48;
    o.ui = false;
    p = std::make_unique<app::platform>(o, "test_app_gl");
  }
  return *p;
}
class gl_environment : public ::testing::Environment {
 public:
  void TearDown() override { gl_platform().reset(); }
};
[[maybe_unused]] ::testing::Environment* const gl_env = ::testing::AddGlobalTestEnvironment(new gl_environment);

// A render target of w x h with a depth copy, in the program's GL context.
app::render_target depth_copy_target(int w, int h) {
  gl();
  app::render_target t;
  t.resize(w, h, true);
  return t;
}

// Draws three overlapping triangles at different depths (and leaves background around them) into
// `target` with the DEPTH_COPY mesh shader.
void draw_scene(app::render_target& target, app::mesh_renderer& mesh) {
  target.bind();
  target.clear(0.2f, 0.3f, 0.4f, 1.0f);
  const float v[] = {-0.8f, -0.7f, -2.0f, 0.6f, -0.5f, -2.0f, -0.1f, 0.8f, -2.0f,   // far
                     -0.5f, -0.9f, -1.3f, 0.9f, 0.1f, -1.6f, -0.6f, 0.4f, -1.1f,   // tilted, crosses the first
                     0.1f, -0.2f, -3.5f, 1.2f, 0.9f, -3.0f, 0.0f, 1.1f, -3.2f};    // behind both
  const std::uint32_t idx[] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  app::gl_buffer vb = app::make_buffer(sizeof v, v);
  app::gl_buffer ib = app::make_buffer(sizeof idx, idx);
  const glm::mat4 view(1.0f);
  const glm::mat4 proj = glm::perspective(glm::radians(60.0f), float(target.width()) / float(target.height()), 0.5f, 20.0f);
  mesh.draw(vb.get(), ib.get(), 3, view, proj);
  app::gl_check("test_app_gl draw_scene");
}

// GL rows (bottom first) of `v` turned top first, as render_target's read-backs return them.
template <class T>
std::vector<T> flipped(const std::vector<T>& v, int w, int h) {
  std::vector<T> out(v.size());
  for (int y = 0; y < h; ++y)
    std::memcpy(out.data() + std::size_t(y) * w, v.data() + std::size_t(h - 1 - y) * w, sizeof(T) * std::size_t(w));
  return out;
}

// The reader's copies of colour and depth copy against GL's own read-backs, bit for bit, on `ctx`'s
// backend; the scene must have both drawn and background pixels so that the check can fail.
void check_reader_against_read_back(canopy::context& ctx) {
  const int w = 97, h = 61;  // odd sizes: no row padding to hide behind
  app::render_target target = depth_copy_target(w, h);
  app::mesh_renderer mesh(true);
  draw_scene(target, mesh);
  app::texture_reader colour(ctx), depth(ctx);
  colour.attach(target.color_texture(), GL_RGBA8, w, h);
  depth.attach(target.depth_copy_texture(), GL_R32F, w, h);
  const std::size_t n = std::size_t(w) * h;
  canopy::buffer<std::uint32_t> c(ctx, n);
  canopy::buffer<float> d(ctx, n);
  colour.read(c.view());
  depth.read(d.view());
  std::vector<std::uint32_t> hc(n);
  std::vector<float> hd(n);
  canopy::copy(ctx, canopy::span<const std::uint32_t>(c.view()), canopy::host_span(hc.data(), n));
  canopy::copy(ctx, canopy::span<const float>(d.view()), canopy::host_span(hd.data(), n));
  ctx.synchronize();

  const std::vector<std::uint8_t> rgba = target.read_rgba();  // top first
  const std::vector<float> gl_depth = target.read_depth();    // top first
  std::vector<std::uint32_t> gl_colour(n);
  std::memcpy(gl_colour.data(), rgba.data(), n * 4);
  const std::vector<std::uint32_t> top_c = flipped(hc, w, h);
  const std::vector<float> top_d = flipped(hd, w, h);
  std::size_t colour_differs = 0, depth_differs = 0, drawn = 0, background = 0;
  for (std::size_t i = 0; i < n; ++i) {
    colour_differs += top_c[i] != gl_colour[i];
    depth_differs += std::memcmp(&top_d[i], &gl_depth[i], 4) != 0;
    drawn += gl_depth[i] < 1.0f;
    background += gl_depth[i] == 1.0f;
  }
  EXPECT_EQ(colour_differs, 0u);
  EXPECT_EQ(depth_differs, 0u);
  EXPECT_GT(drawn, n / 10) << "the triangles should cover part of the target";
  EXPECT_GT(background, n / 10) << "the background should show around them";

  // The same two textures read under one interop_mapping (one map and one unmap on CUDA), into
  // cleared buffers.
  canopy::buffer<std::uint32_t> c2(ctx, n);
  canopy::buffer<float> d2(ctx, n);
  c2.fill_bytes(0);
  d2.fill_bytes(0xff);
  {
    app::interop_mapping maps;
    maps.add(colour).add(depth);
    maps.map();
    colour.read(c2.view());
    depth.read(d2.view());
    maps.unmap();
  }
  std::vector<std::uint32_t> hc2(n);
  std::vector<float> hd2(n);
  canopy::copy(ctx, canopy::span<const std::uint32_t>(c2.view()), canopy::host_span(hc2.data(), n));
  canopy::copy(ctx, canopy::span<const float>(d2.view()), canopy::host_span(hd2.data(), n));
  ctx.synchronize();
  const std::vector<std::uint32_t> top_c2 = flipped(hc2, w, h);
  const std::vector<float> top_d2 = flipped(hd2, w, h);
  std::size_t colour_differs2 = 0, depth_differs2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    colour_differs2 += top_c2[i] != gl_colour[i];
    depth_differs2 += std::memcmp(&top_d2[i], &gl_depth[i], 4) != 0;
  }
  EXPECT_EQ(colour_differs2, 0u) << "under interop_mapping";
  EXPECT_EQ(depth_differs2, 0u) << "under interop_mapping";
}

// GL's copy of a shared_image's texture (row 0 = the image's top row, as upload() puts it).
std::vector<std::uint32_t> texture_pixels(const app::shared_image& im) {
  std::vector<std::uint32_t> out(std::size_t(im.width()) * std::size_t(im.height()));
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  glGetTextureImage(im.gl_name(), 0, GL_RGBA, GL_UNSIGNED_BYTE, GLsizei(out.size() * 4), out.data());
  app::gl_check("texture_pixels");
  return out;
}

// shared_image::upload, on its own and under an interop_mapping, against GL's read-back of the
// texture, on `ctx`'s backend. Two different patterns, so that the second upload must land.
void check_image_upload(canopy::context& ctx) {
  gl();
  const int w = 37, h = 23;
  const std::size_t n = std::size_t(w) * h;
  app::shared_image im(ctx);
  im.resize(w, h);
  for (std::uint32_t salt : {1u, 2u}) {
    std::vector<std::uint32_t> pattern(n);
    for (std::size_t i = 0; i < n; ++i) pattern[i] = std::uint32_t(i * 2654435761u) ^ (salt * 0x9e3779b9u);
    canopy::buffer<std::uint32_t> px(ctx, n);
    canopy::copy(ctx, canopy::span<const std::uint32_t>(pattern.data(), n, canopy::memory_space::host), px.view());
    if (salt == 1) {
      im.upload(px.view());
    } else {
      app::interop_mapping maps;
      maps.add(im);
      maps.map();
      im.upload(px.view());
    }  // the destructor unmaps
    ctx.synchronize();
    EXPECT_EQ(texture_pixels(im), pattern) << (salt == 1 ? "upload()" : "upload() under interop_mapping");
  }
}

TEST(AppGl, TextureReaderMatchesGlReadBackOnTheHost) {
  canopy::context ctx(canopy::backend_request::host);
  check_reader_against_read_back(ctx);
}

TEST(AppGl, RenderTargetGenerationCountsReallocations) {
  gl();
  app::render_target t;
  EXPECT_EQ(t.generation(), 0u);
  t.resize(8, 8);
  const std::uint64_t g1 = t.generation();
  EXPECT_EQ(t.depth_copy_texture(), 0u);
  t.resize(8, 8);
  EXPECT_EQ(t.generation(), g1) << "same size, same attachments: no reallocation";
  t.resize(8, 8, true);
  EXPECT_GT(t.generation(), g1);
  EXPECT_NE(t.depth_copy_texture(), 0u);
  const std::uint64_t g2 = t.generation();
  t.resize(9, 8, true);
  EXPECT_GT(t.generation(), g2);
  t.resize(9, 8, false);
  EXPECT_EQ(t.depth_copy_texture(), 0u);
}

// Expects `f` to throw canopy::invalid_argument whose message contains `part`.
template <class F>
void expect_refused(F f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << part << "'";
  } catch (const canopy::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(AppGl, TextureReaderRefusesBadUseByName) {
  canopy::context ctx(canopy::backend_request::host);
  app::render_target target = depth_copy_target(16, 8);
  app::texture_reader r(ctx);
  canopy::buffer<std::uint32_t> px(ctx, 16 * 8);
  canopy::buffer<float> fl(ctx, 16 * 8);
  expect_refused([&] { r.read(px.view()); }, "no texture attached");
  expect_refused([&] { r.attach(0, GL_RGBA8, 16, 8); }, "texture");
  app::gl_texture depth = app::make_texture_2d(GL_DEPTH_COMPONENT32F, 16, 8);
  expect_refused([&] { r.attach(depth.get(), GL_DEPTH_COMPONENT32F, 16, 8); }, "GL_RGBA8 or GL_R32F");
  expect_refused([&] { r.attach(target.color_texture(), GL_RGBA8, 0, 8); }, "width/height");
  r.attach(target.color_texture(), GL_RGBA8, 16, 8);
  expect_refused([&] { r.read(fl.view()); }, "does not match the attached GL_RGBA8");
  expect_refused([&] { r.read(px.view().first(16 * 8 - 1)); }, "width * height");
  r.read(px.view());  // the right call still works after refusals
}

TEST(AppGl, SharedImageUploadsOnTheHost) {
  canopy::context ctx(canopy::backend_request::host);
  check_image_upload(ctx);
}

// A shared_buffer written through an interop_mapping, on `ctx`'s backend: the kernels' bytes (a
// canopy copy into the mapped span) reach GL, and so does a second frame's, through the same
// mapping mapped again.
void check_buffer_under_mapping(canopy::context& ctx) {
  gl();
  app::shared_buffer<std::uint32_t> a(ctx), b(ctx);
  a.reserve(100);
  b.reserve(7);
  app::interop_mapping maps;
  maps.add(a).add(b);
  for (std::uint32_t frame : {1u, 2u}) {
    std::vector<std::uint32_t> va(100), vb(7);
    for (std::size_t i = 0; i < va.size(); ++i) va[i] = std::uint32_t(i * 40503u) + frame;
    for (std::size_t i = 0; i < vb.size(); ++i) vb[i] = 0xabc00000u + std::uint32_t(i) + frame;
    maps.map();
    canopy::span<std::uint32_t> ma = a.map(), mb = b.map();
    canopy::copy(ctx, canopy::span<const std::uint32_t>(va.data(), va.size(), canopy::memory_space::host), ma.first(100));
    canopy::copy(ctx, canopy::span<const std::uint32_t>(vb.data(), vb.size(), canopy::memory_space::host), mb.first(7));
    ctx.synchronize();
    a.unmap(100);
    b.unmap(7);
    maps.unmap();
    std::vector<std::uint32_t> ga(100), gb(7);
    glGetNamedBufferSubData(a.gl_name(), 0, GLsizeiptr(ga.size() * 4), ga.data());
    glGetNamedBufferSubData(b.gl_name(), 0, GLsizeiptr(gb.size() * 4), gb.data());
    app::gl_check("check_buffer_under_mapping");
    EXPECT_EQ(ga, va) << "frame " << frame;
    EXPECT_EQ(gb, vb) << "frame " << frame;
  }
}

TEST(AppGl, SharedBufferUnderAnInteropMappingOnTheHost) {
  canopy::context ctx(canopy::backend_request::host);
  check_buffer_under_mapping(ctx);
}

TEST(AppGl, InteropMappingRefusesBadUseByName) {
  canopy::context ctx(canopy::backend_request::host), other(canopy::backend_request::host);
  app::render_target target = depth_copy_target(16, 8);
  app::texture_reader colour(ctx), depth(ctx), elsewhere(other), empty(ctx);
  colour.attach(target.color_texture(), GL_RGBA8, 16, 8);
  depth.attach(target.depth_copy_texture(), GL_R32F, 16, 8);
  elsewhere.attach(target.color_texture(), GL_RGBA8, 16, 8);
  app::shared_image shown(ctx), unsized(ctx);
  shown.resize(16, 8);
  app::shared_buffer<std::uint32_t> boxes(ctx), unreserved(ctx);
  boxes.reserve(10);
  {
    app::interop_mapping m;
    m.add(colour);
    expect_refused([&] { m.add(colour); }, "added before (entry 0)");
    expect_refused([&] { m.add(elsewhere); }, "another context");
    EXPECT_EQ(m.size(), 1u);
  }
  const auto refused_map = [&](auto& object, const std::string& part) {
    app::interop_mapping m;
    m.add(colour).add(object);
    expect_refused([&] { m.map(); }, "entry 1");
    expect_refused([&] { m.map(); }, part);
    EXPECT_FALSE(m.mapped());
  };
  refused_map(empty, "no texture attached");
  refused_map(unsized, "never resized");
  refused_map(unreserved, "never reserved");
  boxes.map();
  refused_map(boxes, "mapped by its own map()");
  boxes.unmap(0);
  {
    app::interop_mapping maps, second;
    maps.add(colour).add(depth).add(shown).add(boxes);
    second.add(depth);
    maps.map();
    EXPECT_TRUE(maps.mapped());
    expect_refused([&] { maps.map(); }, "is mapped already");
    expect_refused([&] { maps.add(empty); }, "is mapped");
    expect_refused([&] { maps.clear(); }, "unmap() first");
    expect_refused([&] { second.map(); }, "held by another interop_mapping");
    expect_refused([&] { colour.attach(target.color_texture(), GL_RGBA8, 16, 8); }, "held by an interop_mapping");
    expect_refused([&] { shown.resize(32, 8); }, "held by an interop_mapping");
    expect_refused([&] { boxes.reserve(1000); }, "held by an interop_mapping");
    boxes.reserve(10);     // within its capacity: nothing to re-register, allowed while held
    shown.resize(16, 8);  // the same size: allowed while held
    boxes.map();
    expect_refused([&] { maps.unmap(); }, "not been ended by its unmap()");
    EXPECT_TRUE(maps.mapped());
    boxes.unmap(0);
    maps.unmap();
    maps.unmap();  // a second unmap does nothing
    EXPECT_FALSE(maps.mapped());
    colour.attach(target.color_texture(), GL_RGBA8, 16, 8);  // free again
    boxes.reserve(1000);
    second.map();  // depth is free for another mapping now
    second.unmap();
    maps.map();  // again, with boxes re-registered by its growth
    maps.unmap();
    maps.clear();
    EXPECT_EQ(maps.size(), 0u);
    maps.add(elsewhere);  // a cleared mapping takes another context
  }
  {
    app::interop_mapping left_mapped;
    left_mapped.add(shown).add(boxes);
    left_mapped.map();
    boxes.map();
  }  // the destructor unmaps and ends the buffer's use left open
  boxes.reserve(10);
  shown.resize(16, 8);
  app::interop_mapping nothing;
  nothing.map();  // no objects: nothing to do
  nothing.unmap();
}

TEST(AppGl, LoadProgramPutsDefinesAfterTheVersionLine) {
  gl();
  char tmpl[] = "/tmp/canopy-shaders-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const auto write = [&](const char* name, const char* text) { std::ofstream(dir + "/" + name) << text; };
  // Compiles only with the define: the fragment shader's output is declared under it.
  write("v.vert", "#version 450 core\nvoid main() { gl_Position = vec4(0.0); }\n");
  write("f.frag", "#version 450 core\n#ifdef WANT_OUT\nout vec4 c;\n#endif\nvoid main() { c = vec4(1.0); }\n");
  write("nover.vert", "void main() { gl_Position = vec4(0.0); }\n");
  const char* old = std::getenv("CANOPY_SHADER_DIR");
  const std::string saved = old ? old : "";
  ::setenv("CANOPY_SHADER_DIR", dir.c_str(), 1);
  EXPECT_NO_THROW({ app::gl_program p = app::load_program("v.vert", "f.frag", "#define WANT_OUT\n"); });
  EXPECT_THROW({ app::gl_program p = app::load_program("v.vert", "f.frag"); }, canopy::error);
  expect_refused([&] { app::gl_program p = app::load_program("nover.vert", "f.frag", "#define WANT_OUT\n"); },
                 "#version");
  if (old) ::setenv("CANOPY_SHADER_DIR", saved.c_str(), 1);
  else ::unsetenv("CANOPY_SHADER_DIR");
  for (const char* f : {"v.vert", "f.frag", "nover.vert"}) std::remove((dir + "/" + f).c_str());
  ::rmdir(dir.c_str());
}

// CUDA backend: the reader maps the registered textures and copies their arrays on the stream.
class CudaAppGl : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!canopy::cuda_usable(&why)) GTEST_SKIP() << "CUDA backend unusable here: " << why;
  }
};

TEST_F(CudaAppGl, TextureReaderMatchesGlReadBack) {
  canopy::context ctx(canopy::backend_request::cuda);
  check_reader_against_read_back(ctx);
}

TEST_F(CudaAppGl, SharedImageUploads) {
  canopy::context ctx(canopy::backend_request::cuda);
  check_image_upload(ctx);
}

TEST_F(CudaAppGl, SharedBufferUnderAnInteropMapping) {
  canopy::context ctx(canopy::backend_request::cuda);
  check_buffer_under_mapping(ctx);
}

TEST_F(CudaAppGl, TextureReaderRefusesHostMemory) {
  canopy::context ctx(canopy::backend_request::cuda);
  app::render_target target = depth_copy_target(16, 8);
  app::texture_reader r(ctx);
  r.attach(target.color_texture(), GL_RGBA8, 16, 8);
  std::vector<std::uint32_t> host(16 * 8);
  expect_refused([&] { r.read(canopy::host_span(host.data(), host.size())); }, "memory");
}

}  // namespace
