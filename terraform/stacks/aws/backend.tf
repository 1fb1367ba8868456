# Local state, at the path `spotbatch infra` gives at `terraform init` (-backend-config=path=...): under
# runs/infra/<target>/, never in this folder. For shared state, replace this file with backend.tf.example.
terraform {
  backend "local" {}
}
