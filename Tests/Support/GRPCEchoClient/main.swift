print("client")
