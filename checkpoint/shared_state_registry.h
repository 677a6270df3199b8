// SharedStateRegistry: reference counts of the files in a job's shared directory (Flink's
// SharedStateRegistry), kept by the CheckpointCoordinator of the job's current attempt.
//
// Incremental checkpoints write a file once (<job dir>/shared/NAME, unique per upload) and later
// checkpoints reference it. The registry records, per file, which checkpoints reference it:
// pending checkpoints from the acknowledgements that named it, completed retained ones from
// their metadata. A file is deleted when its last reference is dropped — when the checkpoints
// that used it are subsumed by retention, aborted, expired or declined — so a file a retained
// checkpoint or a pending one that acknowledged it uses is never deleted. A file an ack names
// that the registry does not hold is new: owned by that checkpoint, deleted if it aborts.
//
// On a (re)start the coordinator rebuilds it from the retained checkpoints' metadata and then
// deletes the files of the directory nothing references (DeleteUnreferenced: files of aborted
// checkpoints whose coordinator died, uploads of subtasks that never acknowledged).
// Savepoints never reference shared files. Threading: coordinator thread only.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/protocol/control_messages.h"
#include "common/status.h"
#include "common/types.h"

namespace keyflow {

class SharedStateRegistry {
 public:
  // `shared_dir` is the absolute <job dir>/shared; `fs` must outlive the registry.
  SharedStateRegistry(std::string shared_dir, FileSystem& fs);
  const std::string& directory() const { return dir_; }

  // Adds checkpoint `id`'s references to `files` (again: no-op). InvalidArgument, and nothing
  // registered, when a name is held with another size or checksum (two uploads under one name).
  // `new_names` (optional, out): the names the registry did not hold before.
  Status Register(CheckpointId id, const std::vector<SharedStateFile>& files,
                  std::vector<std::string>* new_names = nullptr);
  // Drops every reference of checkpoint `id` and deletes each file no other checkpoint
  // references. Returns how many files it deleted; a failed delete is logged (the file is an
  // orphan for the next DeleteUnreferenced).
  size_t Unregister(CheckpointId id);
  // Deletes `name` from the shared directory unless the registry holds it (an upload of a
  // checkpoint that was already aborted). Returns whether it deleted a file.
  bool DeleteIfUnregistered(const std::string& name);

  struct Swept {
    size_t files = 0;
    uint64_t bytes = 0;
  };
  // Deletes every regular file of the shared directory the registry does not hold (no
  // directory: nothing to do).
  Result<Swept> DeleteUnreferenced();

  // nullptr when not registered.
  const SharedStateFile* Find(const std::string& name) const;
  // The checkpoints referencing `name`, ascending (empty when not registered).
  std::vector<int64_t> ReferencesOf(const std::string& name) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    SharedStateFile file;
    std::set<int64_t> checkpoints;  // ids referencing it
  };
  bool Delete(const std::string& name);

  std::string dir_;
  FileSystem* fs_;
  std::map<std::string, Entry> entries_;                       // by name
  std::map<int64_t, std::vector<std::string>> by_checkpoint_;  // id -> names it references
};

}  // namespace keyflow
