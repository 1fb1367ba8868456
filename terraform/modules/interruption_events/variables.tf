variable "name" {
  description = "Prefix of the queues and rules (the stack's name)."
  type        = string
}

variable "message_retention_seconds" {
  description = "How long an undelivered event stays: past the two-minute notice it is history."
  type        = number
  default     = 300

  validation {
    condition     = var.message_retention_seconds >= 60 && var.message_retention_seconds <= 1209600
    error_message = "message_retention_seconds must be between 60 and 1209600 (SQS's limits)."
  }
}

variable "visibility_timeout_seconds" {
  description = "How long a received event is hidden before another receive sees it again (a coordinator that died while handling it)."
  type        = number
  default     = 30

  validation {
    condition     = var.visibility_timeout_seconds >= 0 && var.visibility_timeout_seconds <= 43200
    error_message = "visibility_timeout_seconds must be between 0 and 43200 (SQS's limits)."
  }
}

variable "max_receive_count" {
  description = "Receives of one event before it moves to the dead-letter queue."
  type        = number
  default     = 5

  validation {
    condition     = var.max_receive_count >= 1 && var.max_receive_count <= 1000
    error_message = "max_receive_count must be between 1 and 1000."
  }
}

variable "tags" {
  description = "Tags for the queues and rules."
  type        = map(string)
  default     = {}
}
