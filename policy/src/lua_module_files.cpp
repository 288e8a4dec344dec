// require, dofile and loadfile: Lua files from the policy module directories only, checked
// on the resolved path so that a symlink in a module directory cannot lead outside. Separate
// from the rest of the sandbox because it is the one part that touches the file system.
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <string>

#include "lua_sandbox.hpp"

namespace grain::policy {
namespace {

// A path or module name as the C library will see it: one with a NUL inside would be cut
// there ("name\0x" would load "name"), so it is refused.
const char* check_path_arg(lua_State* L, int idx, const char* what) {
  std::size_t len = 0;
  const char* s = luaL_checklstring(L, idx, &len);
  if (std::strlen(s) != len) luaL_error(L, "%s: a name with a NUL character is not allowed", what);
  return s;
}

// Pushes the compiled chunk of a file inside the module directories, or raises. (Lua errors
// longjmp past C++ destructors: no std::string may be alive where one is raised.)
void load_allowed_file(lua_State* L, const char* path) {
  const module_dirs& dirs = sandbox_of(L).dirs();
  bool inside = false;
  {
    const std::string real = real_path(path);
    inside = !real.empty() && dirs.contains(real);
    lua_pushstring(L, inside ? real.c_str() : dirs.text().c_str());
  }
  if (!inside)
    luaL_error(L, "'%s' is outside the policy module directories (%s)", path, lua_tostring(L, -1));
  const int rc = luaL_loadfilex(L, lua_tostring(L, -1), "t");
  lua_remove(L, -2);
  if (rc != LUA_OK) lua_error(L);
}

int l_loadfile(lua_State* L) {
  load_allowed_file(L, check_path_arg(L, 1, "loadfile"));
  return 1;
}

int l_dofile(lua_State* L) {
  load_allowed_file(L, check_path_arg(L, 1, "dofile"));
  lua_call(L, 0, LUA_MULTRET);
  return lua_gettop(L) - 1;
}

// require(name): modules from the module directories only, cached. The strings live on the
// Lua stack, since Lua errors skip C++ destructors.
int l_require(lua_State* L) {
  const module_dirs& dirs = sandbox_of(L).dirs();
  const char* name = check_path_arg(L, 1, "require");
  for (const char* c = name; *c; ++c)
    if (!(std::isalnum(static_cast<unsigned char>(*c)) || *c == '_' || *c == '.' || *c == '-'))
      return luaL_error(L, "require: invalid module name '%s'", name);
  lua_settop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, "grain.loaded");  // 2
  if (lua_getfield(L, 2, name) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  const char* rel = luaL_gsub(L, name, ".", "/");  // 3
  bool found = false;
  for (std::size_t i = 0; i < dirs.all().size() && !found; ++i) {
    lua_pushfstring(L, "%s/%s.lua", dirs.all()[i].c_str(), rel);  // 4
    found = ::access(lua_tostring(L, 4), R_OK) == 0;
    if (!found) lua_pop(L, 1);
  }
  if (!found) {
    lua_pushstring(L, dirs.text().c_str());
    return luaL_error(L, "module '%s' not found in the policy module directories (%s)", name,
                      lua_tostring(L, -1));
  }
  load_allowed_file(L, lua_tostring(L, 4));
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, 2, name);
  return 1;
}

}  // namespace

void install_module_loaders(lua_State* L) {
  lua_pushcfunction(L, l_loadfile);
  lua_setglobal(L, "loadfile");
  lua_pushcfunction(L, l_dofile);
  lua_setglobal(L, "dofile");
  lua_pushcfunction(L, l_require);
  lua_setglobal(L, "require");
  // package.loaded is gone with package: require keeps its own cache.
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "grain.loaded");
}

}  // namespace grain::policy
