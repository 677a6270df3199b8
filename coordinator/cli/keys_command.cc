#include "coordinator/cli/keys_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <map>
#include <ostream>

#include <nlohmann/json.hpp>

#include "common/process/command_line.h"
#include "common/security/tls_certificate.h"
#include "coordinator/cli/job_commands.h"
#include "coordinator/rest/rest_token.h"

namespace keyflow::cli {
namespace {

namespace fs = std::filesystem;

constexpr unsigned kDirMode = 0700;
constexpr unsigned kSecretMode = 0600;
constexpr unsigned kPublicMode = 0644;

Status MakePrivateDir(const std::string& path) {
  if (::mkdir(path.c_str(), kDirMode) != 0 && errno != EEXIST) {
    return IoError("cannot create directory " + path + ": " + std::strerror(errno) +
                   ": check that its parent exists and is writable");
  }
  // mkdir's mode is reduced by the umask, and an existing (empty) directory keeps its own.
  if (::chmod(path.c_str(), kDirMode) != 0) {
    return IoError("cannot make directory " + path + " private (0700): " + std::strerror(errno));
  }
  return Status::Ok();
}

// Writes NAME.key (0600) and NAME.pub (0644) of a fresh key pair; the .key first, so that a key
// the coordinator admits always has its secret half somewhere.
Status WriteKeyPair(const KeyDirectory& keys, Role role, const std::string& name) {
  KF_ASSIGN_OR_RETURN(CurveKeyPair pair, GenerateCurveKeyPair());
  KeyFile file{PeerIdentity{role, name}, pair};
  KF_RETURN_IF_ERROR(WriteNewKeyFile(keys.SecretKeyFile(role, name), file, kSecretMode));
  file.keys.secret_key.clear();
  KF_RETURN_IF_ERROR(WriteNewKeyFile(keys.PublicKeyFile(role, name), file, kPublicMode));
  // An operator client also gets its REST API token (rest_token.h); a worker never does.
  if (role == Role::kOperator) KF_RETURN_IF_ERROR(WriteNewRestToken(keys, name));
  return Status::Ok();
}

bool HoldsKeySet(const KeyDirectory& keys) {
  std::error_code ec;
  for (const std::string& p : {keys.CoordinatorKey(), keys.CoordinatorPub(),
                               keys.RoleDir(Role::kWorker), keys.RoleDir(Role::kOperator)}) {
    if (fs::exists(p, ec)) return true;
  }
  return false;
}

Status RequireKeySet(const std::string& dir) {
  if (dir.empty()) {
    return InvalidArgument(
        "no key directory: pass --keys DIR (or set KEYFLOW_KEYS); create one with `keyflow keys "
        "init DIR`");
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || !fs::exists(KeyDirectory{dir}.CoordinatorPub(), ec)) {
    return NotFound(dir + " holds no key set: create one with `keyflow keys init " + dir + "`");
  }
  return Status::Ok();
}

std::vector<std::string> SplitNames(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    names.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

const char* KeysDirDefault() {
  const char* env = std::getenv("KEYFLOW_KEYS");
  return env == nullptr ? "" : env;
}

int FailTo(std::ostream& err, const Status& status, int code) {
  err << "keyflow: " << status.message() << "\n";
  return code;
}

constexpr char kRestHostsDoc[] =
    "extra host names or IP addresses the REST certificate is valid for, comma-separated (it "
    "always names localhost, 127.0.0.1, ::1 and this host's names)";

// DefaultRestTlsHosts() plus the comma-separated `extra` ones.
std::vector<std::string> RestTlsHosts(const std::string& extra) {
  std::vector<std::string> hosts = DefaultRestTlsHosts();
  if (!extra.empty()) {
    for (std::string& h : SplitNames(extra)) {
      if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(std::move(h));
    }
  }
  return hosts;
}

int RunInit(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description opts;
  std::string dir, clients = "operator", rest_hosts;
  int64_t workers = 2;
  opts.add_options()("dir", po::value(&dir)->required(), "the new key directory (positional)")(
      "workers", po::value(&workers)->default_value(workers),
      "worker keys to create: workers/worker-0 .. worker-(N-1) (0..1024)")(
      "clients", po::value(&clients)->default_value(clients),
      "operator client keys to create, comma-separated (clients/NAME)")(
      "rest-hosts", po::value(&rest_hosts), kRestHostsDoc);
  po::positional_options_description pos;
  pos.add("dir", 1);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine(
          "usage: keyflow keys init DIR [--workers N] [--clients NAME,...] [--rest-hosts H,...]\n"
          "Creates a cluster's key set in DIR (0700): coordinator.key/.pub, workers/worker-I.key/"
          ".pub and clients/NAME.key/.pub (.key 0600, .pub 0644), and the REST server's "
          "self-signed\nTLS certificate rest/tls.crt (0644) with its key rest/tls.key (0600). "
          "Never overwrites a key.",
          opts, pos, args, &vm, &code)) {
    return code;
  }
  if (workers < 0 || workers > 1024) {
    return FailTo(err,
                  InvalidArgument("--workers " + std::to_string(workers) +
                                  " is out of range: give 0..1024 (add more later with `keyflow "
                                  "keys add-worker NAME`)"),
                  kExitUsage);
  }
  std::vector<std::string> names =
      clients.empty() ? std::vector<std::string>{} : SplitNames(clients);
  for (const std::string& name : names) {
    if (Status s = ValidateKeyName(name); !s.ok()) {
      return FailTo(err, s.WithContext("--clients"), kExitUsage);
    }
  }
  if (Status s = InitKeySet(dir, static_cast<int>(workers), names, RestTlsHosts(rest_hosts));
      !s.ok()) {
    return FailTo(err, s, kExitFailure);
  }
  out << "created the key set " << dir << ": coordinator, " << workers << " worker key(s), "
      << names.size() << " client key(s)\n"
      << "  the coordinator needs " << dir << " (--keys " << dir << ")\n"
      << "  a worker needs only coordinator.pub and workers/NAME.key (--keys DIR --key-name NAME)\n"
      << "  the CLI: export KEYFLOW_KEYS=" << dir << " (client key \"operator\" by default)\n"
      << "  the REST server: --rest-tls-cert " << KeyDirectory{dir}.RestTlsCert()
      << " --rest-tls-key " << KeyDirectory{dir}.RestTlsKey() << " (clients pin the .crt)\n";
  return kExitOk;
}

int RunRestTls(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description opts;
  std::string dir, rest_hosts;
  opts.add_options()("keys", po::value(&dir)->default_value(KeysDirDefault()),
                     "the key directory (default: $KEYFLOW_KEYS)")(
      "rest-hosts", po::value(&rest_hosts), kRestHostsDoc);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow keys rest-tls [--keys DIR] [--rest-hosts H,...]\n"
                        "Creates the REST server's self-signed TLS certificate DIR/rest/tls.crt "
                        "(0644) and key DIR/rest/tls.key (0600)\nin an existing key set (one "
                        "made before `keys init` wrote them); refuses to overwrite them.",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  if (Status s = AddRestTls(dir, RestTlsHosts(rest_hosts)); !s.ok()) {
    return FailTo(err, s, kExitFailure);
  }
  const KeyDirectory keys{dir};
  out << "created " << keys.RestTlsCert() << " and " << keys.RestTlsKey()
      << " (keep it private): run the coordinator with --rest-tls-cert " << keys.RestTlsCert()
      << " --rest-tls-key " << keys.RestTlsKey() << "\n";
  return kExitOk;
}

// Parses `NAME [--keys DIR]` (the add-* subcommands) and validates NAME. False: return `*code`.
bool ParseNameAndKeys(const std::string& usage, const char* name_doc,
                      const std::vector<std::string>& args, std::ostream& err, std::string* name,
                      std::string* dir, int* code) {
  po::options_description opts;
  opts.add_options()("name", po::value(name)->required(), name_doc)(
      "keys", po::value(dir)->default_value(KeysDirDefault()),
      "the key directory (default: $KEYFLOW_KEYS)");
  po::positional_options_description pos;
  pos.add("name", 1);
  po::variables_map vm;
  if (!ParseCommandLine(usage, opts, pos, args, &vm, code)) return false;
  if (Status s = ValidateKeyName(*name); !s.ok()) {
    *code = FailTo(err, s, kExitUsage);
    return false;
  }
  return true;
}

int RunAdd(Role role, const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::string sub = role == Role::kWorker ? "add-worker" : "add-client";
  const std::string what = role == Role::kWorker ? "worker" : "operator client";
  std::string name, dir;
  int code;
  if (!ParseNameAndKeys("usage: keyflow keys " + sub + " NAME [--keys DIR]\nAdds the " + what +
                            " key NAME to the key set (" +
                            (role == Role::kWorker
                                 ? "workers/NAME.key 0600 and NAME.pub 0644"
                                 : "clients/NAME.key 0600 and NAME.pub 0644, and its REST token "
                                   "NAME.token 0600 with its hash NAME.token-sha256 0644") +
                            "); refuses an existing name.\n"
                            "A running coordinator admits it after `keyflow keys reload`.",
                        "the new key's name (positional)", args, err, &name, &dir, &code)) {
    return code;
  }
  if (Status s = AddKey(dir, role, name); !s.ok()) return FailTo(err, s, kExitFailure);
  const KeyDirectory keys{dir};
  out << "added " << PeerIdentity{role, name}.ToUserId() << ": " << keys.SecretKeyFile(role, name)
      << " (keep it private) and " << keys.PublicKeyFile(role, name) << "\n";
  if (role == Role::kOperator) {
    out << "  its REST token: " << RestTokenFile(keys, name)
        << " (keep it private; send it as `Authorization: Bearer <token>`)\n";
  }
  return kExitOk;
}

int RunAddToken(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description opts;
  std::string name, dir, role = "operator";
  opts.add_options()("name", po::value(&name)->required(),
                     "the operator client key's or the new viewer's name (positional)")(
      "role", po::value(&role)->default_value(role),
      "operator: the token of the existing client key NAME (reads and commands); viewer: a "
      "new read-only token NAME (status, jobs, checkpoints, /metrics, the dashboard)")(
      "keys", po::value(&dir)->default_value(KeysDirDefault()),
      "the key directory (default: $KEYFLOW_KEYS)");
  po::positional_options_description pos;
  pos.add("name", 1);
  po::variables_map vm;
  int code;
  if (!ParseCommandLine(
          "usage: keyflow keys add-token NAME [--role operator|viewer] [--keys DIR]\n"
          "--role operator (default): creates the REST API token of the existing operator "
          "client key NAME\n(clients/NAME.token 0600, clients/NAME.token-sha256 0644), for a "
          "key made before tokens existed.\n--role viewer: creates the read-only token of "
          "viewer NAME (viewers/NAME.token 0600,\nviewers/NAME.token-sha256 0644): it reads "
          "the REST API, /metrics and the dashboard, and commands nothing.\nRefuses to "
          "overwrite a token. A running coordinator admits it after `keyflow keys reload`;\n"
          "removing NAME.token-sha256 and reloading revokes it.",
          opts, pos, args, &vm, &code)) {
    return code;
  }
  if (Status s = ValidateKeyName(name); !s.ok()) return FailTo(err, s, kExitUsage);
  if (role != "operator" && role != "viewer") {
    return FailTo(err,
                  InvalidArgument("--role " + role +
                                  " is not a token role: give operator (reads and commands) or "
                                  "viewer (reads only)"),
                  kExitUsage);
  }
  const KeyDirectory keys{dir};
  if (role == "viewer") {
    if (Status s = AddViewerToken(dir, name); !s.ok()) return FailTo(err, s, kExitFailure);
    out << "added the read-only REST token of viewer " << name << ": "
        << ViewerTokenFile(keys, name)
        << " (keep it private; send it as `Authorization: Bearer <token>`, e.g. Prometheus' "
           "authorization.credentials_file)\n";
    return kExitOk;
  }
  if (Status s = AddRestToken(dir, name); !s.ok()) return FailTo(err, s, kExitFailure);
  out << "added the REST token of client " << name << ": " << RestTokenFile(keys, name)
      << " (keep it private; send it as `Authorization: Bearer <token>`)\n";
  return kExitOk;
}

int RunList(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description opts;
  std::string dir;
  bool json = false;
  opts.add_options()("keys", po::value(&dir)->default_value(KeysDirDefault()),
                     "the key directory (default: $KEYFLOW_KEYS)")(
      "json", po::bool_switch(&json), "print a JSON array instead of a table");
  po::variables_map vm;
  int code;
  if (!ParseCommandLine("usage: keyflow keys list [--keys DIR] [--json]\n"
                        "Prints every key of the key set: ROLE NAME STATE PUBLIC-KEY (STATE: "
                        "admitted, or revoked when only its .key file is left),\nthen the "
                        "viewers' REST tokens (revoked: only NAME.token is left).",
                        opts, {}, args, &vm, &code)) {
    return code;
  }
  Result<std::vector<ListedKey>> keys = ListKeys(dir);
  if (!keys.ok()) return FailTo(err, keys.status(), kExitFailure);
  Result<std::map<std::string, bool>> viewers = ListViewers(KeyDirectory{dir});
  if (!viewers.ok()) return FailTo(err, viewers.status(), kExitFailure);
  auto viewer_state = [](bool admitted) { return admitted ? "admitted" : "revoked"; };
  if (json) {
    nlohmann::json array = nlohmann::json::array();
    for (const ListedKey& k : *keys) {
      array.push_back({{"role", RoleName(k.identity.role)},
                       {"name", k.identity.name},
                       {"state", k.state},
                       {"public_key", k.public_key}});
    }
    for (const auto& [name, admitted] : *viewers) {  // a token without a CURVE key
      array.push_back({{"role", "viewer"},
                       {"name", name},
                       {"state", viewer_state(admitted)},
                       {"public_key", nullptr}});
    }
    out << array.dump(2) << "\n";
    return kExitOk;
  }
  out << std::left << std::setw(13) << "ROLE" << std::setw(20) << "NAME" << std::setw(13) << "STATE"
      << "PUBLIC-KEY\n";
  for (const ListedKey& k : *keys) {
    out << std::setw(13) << RoleName(k.identity.role) << std::setw(20) << k.identity.name
        << std::setw(13) << k.state << k.public_key << "\n";
  }
  for (const auto& [name, admitted] : *viewers) {
    out << std::setw(13) << "viewer" << std::setw(20) << name << std::setw(13)
        << viewer_state(admitted) << "- (a REST token, no key)\n";
  }
  return kExitOk;
}

using Subcommand =
    std::function<int(const std::vector<std::string>&, std::ostream&, std::ostream&)>;

struct SubcommandInfo {
  Subcommand run;
  const char* summary;
};

// The subcommands of `keyflow keys`. `reload` (ask a running coordinator to re-read its trusted
// keys) is a control request and belongs next to the other requests: register it here.
const std::map<std::string, SubcommandInfo>& KeysSubcommands() {
  static const std::map<std::string, SubcommandInfo> subcommands = {
      {"init", {RunInit, "create a cluster's key set in DIR"}},
      {"add-worker",
       {[](const auto& a, auto& o, auto& e) { return RunAdd(Role::kWorker, a, o, e); },
        "add a worker key"}},
      {"add-client",
       {[](const auto& a, auto& o, auto& e) { return RunAdd(Role::kOperator, a, o, e); },
        "add an operator client key"}},
      {"add-token",
       {RunAddToken,
        "create the REST API token of an existing client key, or a viewer's (--role viewer)"}},
      {"rest-tls", {RunRestTls, "create the REST server's TLS certificate in an existing key set"}},
      {"list", {RunList, "list the keys of a key set"}},
      {"reload",
       {[](const auto& a, auto&, auto&) { return RunKeysReloadCommand(a); },
        "make a running coordinator re-read its trusted keys (like SIGHUP; revokes removed keys)"}},
  };
  return subcommands;
}

void PrintKeysUsage(std::ostream& os) {
  os << "usage: keyflow keys <subcommand> [options]   (keyflow keys <subcommand> --help)\n\n"
        "subcommands:\n";
  for (const auto& [name, info] : KeysSubcommands()) {
    os << "  " << std::left << std::setw(12) << name << info.summary << "\n";
  }
}

}  // namespace

Status InitKeySet(const std::string& dir, int workers, const std::vector<std::string>& clients,
                  const std::vector<std::string>& rest_hosts) {
  const KeyDirectory keys{dir};
  std::error_code ec;
  if (HoldsKeySet(keys)) {
    return AlreadyExists(dir + " already holds a key set; keys are never overwritten");
  }
  if (fs::exists(dir, ec) && !(fs::is_directory(dir, ec) && fs::is_empty(dir, ec))) {
    return AlreadyExists(dir +
                         " exists and is not an empty directory: give a new directory for the "
                         "key set");
  }
  KF_RETURN_IF_ERROR(MakePrivateDir(dir));
  KF_RETURN_IF_ERROR(MakePrivateDir(keys.RoleDir(Role::kWorker)));
  KF_RETURN_IF_ERROR(MakePrivateDir(keys.RoleDir(Role::kOperator)));
  KF_ASSIGN_OR_RETURN(CurveKeyPair pair, GenerateCurveKeyPair());
  KeyFile coordinator{PeerIdentity{Role::kCoordinator, "coordinator"}, pair};
  KF_RETURN_IF_ERROR(WriteNewKeyFile(keys.CoordinatorKey(), coordinator, kSecretMode));
  coordinator.keys.secret_key.clear();
  KF_RETURN_IF_ERROR(WriteNewKeyFile(keys.CoordinatorPub(), coordinator, kPublicMode));
  for (int i = 0; i < workers; ++i) {
    KF_RETURN_IF_ERROR(WriteKeyPair(keys, Role::kWorker, "worker-" + std::to_string(i)));
  }
  for (const std::string& name : clients) {
    KF_RETURN_IF_ERROR(ValidateKeyName(name));
    KF_RETURN_IF_ERROR(WriteKeyPair(keys, Role::kOperator, name));
  }
  return AddRestTls(dir, rest_hosts);
}

Status AddRestTls(const std::string& dir, const std::vector<std::string>& hosts) {
  KF_RETURN_IF_ERROR(RequireKeySet(dir));
  const KeyDirectory keys{dir};
  KF_RETURN_IF_ERROR(MakePrivateDir(keys.RestDir()));
  SelfSignedCertificateOptions options;
  options.hosts = hosts;
  return WriteSelfSignedCertificate(keys.RestTlsCert(), keys.RestTlsKey(), options);
}

Status AddKey(const std::string& dir, Role role, const std::string& name) {
  KF_RETURN_IF_ERROR(RequireKeySet(dir));
  KF_RETURN_IF_ERROR(ValidateKeyName(name));
  const KeyDirectory keys{dir};
  std::error_code ec;
  if (fs::exists(keys.SecretKeyFile(role, name), ec) ||
      fs::exists(keys.PublicKeyFile(role, name), ec)) {
    return AlreadyExists("the key set " + dir + " already has a " + std::string(RoleName(role)) +
                         " key named " + name +
                         ": keys are never overwritten; choose another name");
  }
  KF_RETURN_IF_ERROR(MakePrivateDir(keys.RoleDir(role)));
  return WriteKeyPair(keys, role, name);
}

Status AddRestToken(const std::string& dir, const std::string& name) {
  KF_RETURN_IF_ERROR(RequireKeySet(dir));
  KF_RETURN_IF_ERROR(ValidateKeyName(name));
  const KeyDirectory keys{dir};
  std::error_code ec;
  if (!fs::exists(keys.SecretKeyFile(Role::kOperator, name), ec)) {
    return NotFound("the key set " + dir + " has no operator client key named " + name +
                    ": create it with `keyflow keys add-client " + name +
                    "` (which makes its "
                    "token too)");
  }
  return WriteNewRestToken(keys, name);
}

Status AddViewerToken(const std::string& dir, const std::string& name) {
  KF_RETURN_IF_ERROR(RequireKeySet(dir));
  KF_RETURN_IF_ERROR(ValidateKeyName(name));
  Status s = WriteNewViewerToken(KeyDirectory{dir}, name);
  if (s.code() == StatusCode::kAlreadyExists) {
    return AlreadyExists("the key set " + dir + " already has a viewer named " + name + " (" +
                         s.message() + "): choose another name");
  }
  return s;
}

Result<std::vector<ListedKey>> ListKeys(const std::string& dir) {
  KF_RETURN_IF_ERROR(RequireKeySet(dir));
  const KeyDirectory keys{dir};
  std::vector<ListedKey> listed;
  KF_ASSIGN_OR_RETURN(KeyFile coordinator, ReadKeyFile(keys.CoordinatorPub(), false));
  listed.push_back({coordinator.identity, coordinator.keys.public_key, "coordinator"});
  for (Role role : {Role::kWorker, Role::kOperator}) {
    // name -> (has .pub, has .key)
    std::map<std::string, std::pair<bool, bool>> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(keys.RoleDir(role), ec)) {
      const std::string ext = entry.path().extension().string();
      if (ext == ".pub") names[entry.path().stem().string()].first = true;
      if (ext == ".key") names[entry.path().stem().string()].second = true;
    }
    if (ec) return IoError("cannot list " + keys.RoleDir(role) + ": " + ec.message());
    for (const auto& [name, present] : names) {
      const bool admitted = present.first;
      KF_ASSIGN_OR_RETURN(KeyFile file, ReadKeyFile(admitted ? keys.PublicKeyFile(role, name)
                                                             : keys.SecretKeyFile(role, name),
                                                    /*require_secret=*/!admitted));
      listed.push_back({file.identity, file.keys.public_key, admitted ? "admitted" : "revoked"});
    }
  }
  return listed;
}

int RunKeysCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    PrintKeysUsage(err);
    return kExitUsage;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    PrintKeysUsage(out);
    return kExitOk;
  }
  auto it = KeysSubcommands().find(args[0]);
  if (it == KeysSubcommands().end()) {
    err << "keyflow: unknown subcommand 'keys " << args[0] << "'\n";
    PrintKeysUsage(err);
    return kExitUsage;
  }
  return it->second.run(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
}

}  // namespace keyflow::cli
