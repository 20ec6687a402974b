# Sourced by the bench/calibrate tests: keeps a copy of data/calibration/*.yaml in a temporary
# folder ($tmp, which the test also uses for its own files) and puts it back on exit, so that a
# failing run never leaves its fit behind; an unchanged file is left alone (a copy over it would
# make the build embed the data again). Needs $repo.
tmp=$(mktemp -d)
cp "$repo"/data/calibration/*.yaml "$tmp"/
restore() {
  for f in "$tmp"/*.yaml; do cmp -s "$f" "$repo/data/calibration/$(basename "$f")" || cp "$f" "$repo/data/calibration/"; done
  rm -rf "$tmp"
}
trap restore EXIT
